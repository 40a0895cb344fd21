package dev.placementaudit.service.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class SubcommandsTest {
    @Command(name = "parent")
    static final class Parent {
    }

    @Command(name = "simulate")
    static final class One {
    }

    @Command(name = "publish")
    static final class Two {
    }

    private final List<String> made = new ArrayList<>();

    private Subcommands subcommands() {
        return new Subcommands().with("simulate", () -> {
            made.add("simulate");
            return new One();
        }).with("publish", () -> {
            made.add("publish");
            return new Two();
        });
    }

    @Test
    void aNamedSubcommandIsTheOnlyOneMade() {
        CommandLine cli = subcommands().addTo(new CommandLine(new Parent()), "publish");

        assertThat(cli.getSubcommands()).containsOnlyKeys("publish");
        assertThat(made).containsExactly("publish");
    }

    @Test
    void noneNamedOrAnUnknownNameMakesThemAllInOrder() {
        assertThat(subcommands().addTo(new CommandLine(new Parent()), null).getSubcommands().keySet()).containsExactly("simulate", "publish");
        assertThat(subcommands().addTo(new CommandLine(new Parent()), "--verbose").getSubcommands().keySet()).containsExactly("simulate", "publish");
        assertThat(subcommands().addTo(new CommandLine(new Parent()), "pubilsh").getSubcommands().keySet()).containsExactly("simulate", "publish");
    }

    @Test
    void aMisspelledSubcommandStillGetsPicoclisSuggestion() {
        CommandLine cli = CliErrors.install(subcommands().addTo(new CommandLine(new Parent()), "pubilsh"));
        StringWriter err = new StringWriter();
        cli.setErr(new PrintWriter(err));

        int exit = cli.execute("pubilsh");

        assertThat(exit).isEqualTo(CommandFailure.USAGE);
        assertThat(err.toString()).contains("publish");
    }
}
