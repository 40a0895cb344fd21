package dev.placementaudit.producer.cli;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.publish.PublishException;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.service.cli.CliErrors;
import dev.placementaudit.service.cli.CommandFailure;
import dev.placementaudit.service.cli.ProjectVersion;
import org.apache.kafka.clients.producer.RecordMetadata;
import picocli.CommandLine.Command;
import picocli.CommandLine;

import java.util.function.Supplier;

/** {@code producer publish|simulate|explain|sample-model}: how model loads enter the pipeline. */
@Command(name = "producer", mixinStandardHelpOptions = true, versionProvider = ProjectVersion.class,
        description = "Turns model loads into ModelLoaded events on Kafka.",
        subcommands = {PublishCommand.class, SimulateCommand.class, ExplainCommand.class, SampleModelCommand.class})
public final class ProducerCli {
    static final String PRODUCER = "placement-audit-producer/" + ProjectVersion.get();

    public static void main(String[] args) {
        AvroTrust.install();
        System.exit(commandLine().execute(args));
    }

    public static CommandLine commandLine() {
        return CliErrors.install(new CommandLine(new ProducerCli()));
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
