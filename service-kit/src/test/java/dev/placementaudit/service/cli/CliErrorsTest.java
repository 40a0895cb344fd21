package dev.placementaudit.service.cli;

import dev.placementaudit.service.Settings;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;

import static org.assertj.core.api.Assertions.assertThat;

/** How a failure reaches the user: one line and a code, the trace only when asked for. */
class CliErrorsTest {
    @Command(name = "tool")
    static final class Tool implements Callable<Integer> {
        @Option(names = CliErrors.VERBOSE)
        boolean verbose;
        @Option(names = "--what")
        String what = "usage";
        @Option(names = "--config")
        Path config;

        @Override
        public Integer call() {
            if (config != null) {
                Settings.load(config, Map.of());
            }
            throw switch (what) {
                case "usage" -> new CommandFailure("no store at ./data/audit");
                default -> new IllegalStateException("a bug");
            };
        }
    }

    private record Result(int exit, String err) {
    }

    private static Result run(String... args) {
        StringWriter err = new StringWriter();
        CommandLine cli = CliErrors.install(new CommandLine(new Tool()));
        cli.setErr(new PrintWriter(err));
        return new Result(cli.execute(args), err.toString());
    }

    @Test
    void aUserFacingFailureIsOneLineWithExitCodeTwo() {
        Result result = run();

        assertThat(result.exit()).isEqualTo(2);
        assertThat(result.err()).isEqualTo("error: no store at ./data/audit" + System.lineSeparator());
    }

    @Test
    void verboseAddsTheStackTrace() {
        Result result = run("--verbose");

        assertThat(result.exit()).isEqualTo(2);
        assertThat(result.err()).startsWith("error: no store at ./data/audit").contains("\tat dev.placementaudit.service.cli.CliErrorsTest");
    }

    @Test
    void anUnexpectedFailureIsExitCodeOneAndSaysHowToSeeMore() {
        Result result = run("--what", "bug");

        assertThat(result.exit()).isEqualTo(1);
        assertThat(result.err()).startsWith("error: a bug").contains("run again with --verbose").doesNotContain("\tat ");
    }

    @Test
    void aMissingConfigFileNamesItAndTheWorkingDirectory() {
        Result result = run("--config", "nowhere.properties");

        assertThat(result.exit()).isEqualTo(2);
        assertThat(result.err()).startsWith("error: configuration file nowhere.properties not found (working directory ").doesNotContain("\tat ");
    }

    @Test
    void anUnknownOptionIsNamedWithItsNearestMatch() {
        Result result = run("--wht", "x");

        assertThat(result.exit()).isEqualTo(2);
        assertThat(result.err()).startsWith("error: Unknown option").contains("'--wht'").contains("--what").contains("Try 'tool --help'");
    }
}
