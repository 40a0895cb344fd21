package dev.placementaudit.cli;

import dev.placementaudit.collector.CollectorMain;
import dev.placementaudit.demo.PipelineDemo;
import dev.placementaudit.producer.cli.ProducerCli;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.service.cli.CliErrors;
import dev.placementaudit.service.cli.ProjectVersion;
import dev.placementaudit.service.cli.Subcommands;
import dev.placementaudit.store.cli.AuditStoreCli;
import dev.placementaudit.worker.ResolverWorkerMain;
import picocli.CommandLine;
import picocli.CommandLine.Command;


/**
 * {@code placement-audit}: the one launcher of the distribution. One entry point rather than one per service because the
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

    /**
     * The launcher's commands, each made only when named, with only its own subcommand named ({@code sub}). Lambdas, not
     * method references: creating a reference to {@code ProducerCli::commandLine} loads {@code ProducerCli}, which a
     * store query's class path does not hold.
     */
    private static Subcommands commands(String sub) {
        return new Subcommands().with("producer", () -> ProducerCli.commandLine(sub))
                .with("worker", () -> ResolverWorkerMain.commandLine())
                .with("store", () -> AuditStoreCli.commandLine(sub))
                .with("collector", () -> CollectorMain.commandLine())
                .with("demo", () -> new CommandLine(new PipelineDemo()));
    }

    public static void main(String[] args) {
        String named = commandNamed(args);
        // The producer, the worker and the demo copy records with Avro's builders, which need the events' package trusted
        // first; the store decodes only through EventSerde, which trusts it itself. A query or --version loads no Avro.
        if (named != null && !"store".equals(named)) {
            AvroTrust.install();
        }
        // Before H2 reads it: an embedded store's AUTO_SERVER port listens on loopback only.
        if (System.getProperty("h2.bindAddress") == null) {
            System.setProperty("h2.bindAddress", "127.0.0.1");
        }
        // --version alone needs no command's model at all.
        boolean versionOnly = args.length == 1 && (args[0].equals("--version") || args[0].equals("-V"));
        CommandLine cli = versionOnly ? CliErrors.install(new CommandLine(new PlacementAudit()))
                : commandLine(named, args.length > 1 ? args[1] : null);
        System.exit(cli.execute(args));
    }

    /** Every command: what {@code --help} lists. */
    public static CommandLine commandLine() {
        return commandLine(null, null);
    }

    /**
     * The launcher with only the named command when there is one ({@code placement-audit store where ...} never builds
     * the producer's, worker's or demo's commands, nor loads their classes: the launcher puts only the store's jars on
     * its class path), or with every command.
     */
    static CommandLine commandLine(String named, String sub) {
        CommandLine cli = commands(sub).addTo(new CommandLine(new PlacementAudit()), named);
        cli.setCaseInsensitiveEnumValuesAllowed(true);
        return CliErrors.install(cli);
    }

    /** The command the arguments name (their first word, when it is one of the five), or null. */
    static String commandNamed(String[] args) {
        return args.length > 0 && commands(null).has(args[0]) ? args[0] : null;
    }

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "name a command: producer, worker, store, collector or demo");
    }
}
