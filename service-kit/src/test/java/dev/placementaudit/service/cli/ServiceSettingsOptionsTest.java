package dev.placementaudit.service.cli;

import dev.placementaudit.service.Settings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

class ServiceSettingsOptionsTest {
    @Command(name = "worker", subcommands = Run.class)
    static final class Worker {
    }

    @Command(name = "run")
    static final class Run implements Runnable {
        @Mixin ServiceSettingsOptions settings = new ServiceSettingsOptions();

        @Override
        public void run() {
        }
    }

    @Test
    void helpNamesTheServiceItIsPartOf() {
        String help = new CommandLine(new Worker()).getSubcommands().get("run").getUsageMessage(CommandLine.Help.Ansi.OFF);

        // Without the line breaks usage help puts where it likes.
        assertThat(help.replaceAll("\\s+", "")).contains("propertiesfile(worker.*,kafka.*,connect.timeout)")
                .contains("(default:conf/worker.propertiesofthedistribution").contains("e.g.--setworker.http.port=0(repeatable)");
    }

    @Test
    void setWinsOverTheConfigFile(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("worker.properties");
        Files.writeString(file, "worker.group.id=from-file\nworker.instance.id=w-file\n");
        CommandLine cli = new CommandLine(new Worker());
        CommandLine.ParseResult parsed = cli.parseArgs("run", "--config", file.toString(), "--set", "worker.group.id=from-set");
        Run run = (Run) parsed.subcommand().commandSpec().userObject();

        Settings settings = run.settings.load("worker.properties");

        assertThat(settings.string("worker.group.id", "default")).isEqualTo("from-set");
        assertThat(settings.string("worker.instance.id", "default")).isEqualTo("w-file");
    }
}
