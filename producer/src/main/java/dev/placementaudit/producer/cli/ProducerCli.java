package dev.placementaudit.producer.cli;

import dev.placementaudit.producer.publish.PublishException;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.service.cli.CommandFailure;
import dev.placementaudit.service.cli.ProjectVersion;
import dev.placementaudit.service.cli.Subcommands;
import org.apache.kafka.clients.producer.RecordMetadata;
import picocli.CommandLine.Command;
import picocli.CommandLine;

import java.util.function.Supplier;

/** {@code producer publish|simulate|explain|sample-model|load}: how model loads enter the pipeline. */
@Command(name = "producer", mixinStandardHelpOptions = true, versionProvider = ProjectVersion.class,
        description = "Turns model loads into ModelLoaded events: publish, simulate and load --publish send them to Kafka (load "
                + "--collector to a collector); explain, sample-model, load and observe work on this machine alone, no Kafka needed.")
public final class ProducerCli {
    static final String PRODUCER = "placement-audit-producer/" + ProjectVersion.get();

    private static final Subcommands SUBCOMMANDS = new Subcommands().with("publish", PublishCommand::new)
            .with("simulate", SimulateCommand::new).with("explain", ExplainCommand::new).with("sample-model", SampleModelCommand::new)
            .with("load", LoadCommand::new).with("observe", ObserveCommand::new);

    public static void main(String[] args) {
        AvroTrust.install();
        System.exit(commandLine(Subcommands.named(args)).execute(args));
    }

    /** With only the named subcommand when it is one (see {@link Subcommands}); null for every one, what {@code --help} lists. */
    public static CommandLine commandLine(String named) {
        return SUBCOMMANDS.commandLine(new ProducerCli(), named);
    }

    /** Waits for a publish, turning a broker that is not there into a one-line failure. */
    static RecordMetadata published(Supplier<RecordMetadata> publish) {
        try {
            return publish.get();
        } catch (PublishException e) {
            throw new CommandFailure(e.getMessage(), e);
        }
    }
}
