package dev.placementaudit.cli;

import dev.placementaudit.demo.PipelineDemo;
import dev.placementaudit.producer.cli.ProducerCli;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.service.cli.CliErrors;
import dev.placementaudit.service.cli.ProjectVersion;
import dev.placementaudit.store.cli.AuditStoreCli;
import dev.placementaudit.store.db.H2Credentials;
import dev.placementaudit.worker.ResolverWorkerMain;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code placement-audit}: the one launcher of the distribution. One entry point rather than three because the three
 * commands share one lib/, one conf/ and one way of taking settings; a user learns one name, and {@code --help} lists
 * everything there is.
 */
@Command(name = "placement-audit", mixinStandardHelpOptions = true, versionProvider = ProjectVersion.class,
        description = {"Audits where every tensor of every loaded ML model lands in memory (heap, off-heap, mapped file pages), "
                + "across a fleet, release after release.", ""},
        commandListHeading = "%nCommands:%n",
        footer = {"", "Settings: defaults < conf/*.properties or --config < env PA_* (PA_STORE_JDBC_URL, KAFKA_BOOTSTRAP_SERVERS, ...) "
                + "< -D < --set. Every kafka.* key passes through to the Kafka clients. PA_CONNECT_TIMEOUT bounds every wait for an "
                + "unreachable broker or database (default 10s).",
                "Exit codes: 0 ok, 1 failure, 2 bad usage, configuration or unreachable service, 3 rebuild differs."})
public final class PlacementAudit implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        AvroTrust.install();
        // Before H2 reads it: an embedded store's AUTO_SERVER port listens on loopback only.
        H2Credentials.bindLoopback();
        System.exit(commandLine().execute(args));
    }

    public static CommandLine commandLine() {
        CommandLine cli = new CommandLine(new PlacementAudit())
                .addSubcommand("producer", ProducerCli.commandLine())
                .addSubcommand("worker", ResolverWorkerMain.commandLine())
                .addSubcommand("store", AuditStoreCli.commandLine())
                .addSubcommand("demo", new CommandLine(new PipelineDemo()));
        cli.setCaseInsensitiveEnumValuesAllowed(true);
        return CliErrors.install(cli);
    }

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "name a command: producer, worker, store or demo");
    }
}
