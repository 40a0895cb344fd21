package dev.placementaudit.producer.cli;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.model.FileDigest;
import dev.placementaudit.producer.model.FormPolicy;
import dev.placementaudit.producer.model.ModelLoadedBuilder;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.publish.PlacementEvents;
import dev.placementaudit.service.cli.CommandFailure;
import org.apache.kafka.clients.producer.RecordMetadata;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;

@Command(name = "publish", mixinStandardHelpOptions = true,
        description = "Read a GGUF or safetensors file's header and publish the load a deployment makes of it.")
final class PublishCommand implements Callable<Integer> {
    @Mixin ModelFileOption model = new ModelFileOption();

    @Option(names = "--model-id", description = "stable model id (default: the file name)") String modelId;

    @Mixin TargetOptions target = new TargetOptions();

    @Mixin KafkaOptions kafka = new KafkaOptions();

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        StoredModel stored = model.read();
        FormPolicy forms = target.formPolicy();
        // Refused before the broker is even asked: a strict profile's refusal is about the file, not the cluster.
        try {
            forms.forms(stored.tensors());
        } catch (FormPolicy.LoadRefusedException e) {
            throw new CommandFailure(e.getMessage(), e);
        }
        // The broker is checked before the file is hashed: a wrong address should not cost a pass over 4 GB first.
        try (PlacementEvents events = kafka.connect()) {
            Progress hashing = new Progress(spec.commandLine().getErr(), "bytes hashed", stored.sizeBytes());
            stored = stored.withSha256(FileDigest.sha256(model.file, done -> hashing.update(done, "")));
            ModelLoaded load = ModelLoadedBuilder.build(UUID.randomUUID(), Instant.now(), modelId != null ? modelId : model.file.getFileName().toString(),
                    stored, target.target(), forms, Map.of("source", "file"), ProducerCli.PRODUCER + " publish");
            RecordMetadata written = ProducerCli.published(() -> events.publish(load));
            out.printf(Locale.ROOT, "published load %s of %s (%d tensors, %s) for %s/%s to %s-%d@%d%n", load.getLoadId(), stored.name(),
                    load.getTensors().size(), ByteSizes.format(stored.tensorBytes()), target.deployment, target.release,
                    written.topic(), written.partition(), written.offset());
        }
        return 0;
    }
}
