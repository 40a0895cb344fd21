package dev.placementaudit.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** What {@code --help} shows a user: every command and every option says what it is for. */
class CommandLineHelpTest {
    private static List<CommandSpec> everyCommand(CommandLine cli) {
        List<CommandSpec> all = new ArrayList<>(List.of(cli.getCommandSpec()));
        cli.getSubcommands().values().forEach(sub -> all.addAll(everyCommand(sub)));
        return all;
    }

    @Test
    void everyCommandAndEveryOptionHasADescription() {
        List<String> undescribed = new ArrayList<>();
        for (CommandSpec command : everyCommand(PlacementAudit.commandLine())) {
            if (String.join("", command.usageMessage().description()).isBlank()) {
                undescribed.add(command.qualifiedName());
            }
            for (OptionSpec option : command.options()) {
                if (String.join("", option.description()).isBlank()) {
                    undescribed.add(command.qualifiedName() + " " + option.longestName());
                }
            }
        }

        assertThat(undescribed).isEmpty();
    }

    @Test
    void theLauncherListsItsFiveCommands() {
        assertThat(PlacementAudit.commandLine().getSubcommands()).containsOnlyKeys("producer", "worker", "store", "collector", "demo");
    }

    @Test
    void everyQueryCommandTakesFormatJsonAndNothingElseButTable() {
        CommandLine store = PlacementAudit.commandLine().getSubcommands().get("store");
        for (String query : List.of("where", "diff", "fleet", "alerts", "rebuild", "whatif")) {
            OptionSpec format = store.getSubcommands().get(query).getCommandSpec().findOption("--format");
            assertThat(format).as(query + " --format").isNotNull();
            assertThat(format.completionCandidates()).as(query + " --format values").containsExactly("table", "json");
        }
    }

    @Test
    void withNoCommandItSaysWhichThereAre() {
        StringWriter err = new StringWriter();
        CommandLine cli = PlacementAudit.commandLine();
        cli.setErr(new PrintWriter(err));

        int exit = cli.execute();

        assertThat(exit).isEqualTo(2);
        assertThat(err.toString()).startsWith("error: name a command: producer, worker, store, collector or demo")
                .contains("Try 'placement-audit --help'");
    }
}
