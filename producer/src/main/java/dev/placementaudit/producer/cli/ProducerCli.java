package dev.placementaudit.producer.cli;

import dev.placementaudit.core.placement.AllocationDecision;
import dev.placementaudit.core.placement.AllocationResolver;
import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.core.placement.MemoryDomain;
import dev.placementaudit.core.placement.PlanTensor;
import dev.placementaudit.core.placement.PlannerProfile;
import dev.placementaudit.core.placement.StorageCapabilities;
import dev.placementaudit.core.placement.WeightForm;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.model.DeploymentTarget;
import dev.placementaudit.producer.model.FileDigest;
import dev.placementaudit.producer.model.FormPolicy;
import dev.placementaudit.producer.model.ModelFiles;
import dev.placementaudit.producer.model.ModelLoadedBuilder;
import dev.placementaudit.producer.model.Platforms;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.model.StoredTensor;
import dev.placementaudit.producer.publish.PlacementEvents;
import dev.placementaudit.producer.simulate.Drift;
import dev.placementaudit.producer.simulate.FleetSimulator;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.service.Settings;
import org.apache.kafka.clients.producer.RecordMetadata;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;

/** {@code producer publish|simulate|explain}: how model loads enter the pipeline. */
@Command(name = "producer", mixinStandardHelpOptions = true, versionProvider = ProducerCli.Version.class,
        description = "Turns model loads into ModelLoaded events on Kafka.",
        subcommands = {ProducerCli.Publish.class, ProducerCli.Simulate.class, ProducerCli.Explain.class})
public final class ProducerCli {
    static final String PRODUCER = "placement-audit-producer/" + version();

    public static void main(String[] args) {
        AvroTrust.install();
        System.exit(commandLine().execute(args));
    }

    public static CommandLine commandLine() {
        CommandLine cli = new CommandLine(new ProducerCli());
        cli.setExecutionExceptionHandler((e, commandLine, parsed) -> {
            commandLine.getErr().println("error: " + e.getMessage());
            return 2;
        });
        return cli;
    }

    /** Kafka connection options shared by the commands that publish. */
    static final class KafkaOptions {
        @Option(names = "--bootstrap-servers", description = "Kafka bootstrap servers (default: kafka.bootstrap.servers, env KAFKA_BOOTSTRAP_SERVERS or PA_KAFKA_BOOTSTRAP_SERVERS)")
        String bootstrapServers;

        @Option(names = "--topic", defaultValue = "model-loads", description = "topic to publish to (default: ${DEFAULT-VALUE})")
        String topic;

        @Option(names = "--config", description = "properties file with kafka.* client settings (SASL, TLS, ...)")
        Path config;

        @Option(names = "--max-wait", defaultValue = "15s", description = "longest wait for the broker per publish (default: ${DEFAULT-VALUE})")
        String maxWait;

        PlacementEvents connect() {
            Map<String, String> overrides = new LinkedHashMap<>();
            if (bootstrapServers != null) {
                overrides.put("kafka.bootstrap.servers", bootstrapServers);
            }
            overrides.put("producer.max.wait", maxWait);
            Settings settings = Settings.load(config, overrides);
            Map<String, Object> kafka = settings.kafkaClientConfig();
            if (!kafka.containsKey("bootstrap.servers")) {
                throw new CommandLine.ParameterException(new CommandLine(this), "no Kafka to publish to: pass --bootstrap-servers or set KAFKA_BOOTSTRAP_SERVERS");
            }
            return PlacementEvents.connect(kafka, topic, settings.duration("producer.max.wait", Duration.ofSeconds(15)));
        }
    }

    /** Where and how the model loads. */
    static final class TargetOptions {
        @Option(names = "--deployment", required = true, description = "deployment id")
        String deployment;

        @Option(names = "--release", required = true, description = "release of the runtime doing the load")
        String release;

        @Option(names = "--cluster", defaultValue = "default", description = "cluster (default: ${DEFAULT-VALUE})")
        String cluster;

        @Option(names = "--host", description = "host (default: this machine's name)")
        String host;

        @Option(names = "--profile", defaultValue = "desktop", description = "planner profile: mobile-2gb, edge, desktop, native, or '<name> (strict)' (default: ${DEFAULT-VALUE})")
        String profile;

        @Option(names = "--platform", defaultValue = "jvm", description = "jvm, android, native, nomap, js, wasm, browser (default: ${DEFAULT-VALUE})")
        String platform;

        @Option(names = "--kernels", defaultValue = "all", description = "encodings the runtime's kernels read: all, dense-only, or a list like Q4_K,Q6_K (default: ${DEFAULT-VALUE})")
        String kernels;

        @Option(names = "--servable", split = ",", description = "encodings a loader serves from a mapping (default: SKaiNET #1192's set)")
        List<String> servable;

        @Option(names = "--weights-mapped", description = "override the profile's weightsMapped")
        Boolean weightsMapped;

        PlannerProfile plannerProfile() {
            PlannerProfile named = PlannerProfile.byName(profile);
            return weightsMapped == null ? named : named.withWeightsMapped(weightsMapped);
        }

        StorageCapabilities capabilities() {
            StorageCapabilities caps = Platforms.byName(platform);
            if (servable != null) {
                caps = caps.withMappedServableEncodings(servable.stream().map(dev.placementaudit.core.format.TensorEncodings::parseKnown)
                        .collect(java.util.stream.Collectors.toSet()));
            }
            return caps;
        }

        DeploymentTarget target() {
            String hostName = host != null ? host : System.getenv().getOrDefault("HOSTNAME", "localhost");
            return new DeploymentTarget(deployment, cluster, hostName, release, platform, capabilities());
        }

        FormPolicy formPolicy() {
            return new FormPolicy(plannerProfile(), Platforms.kernels(kernels));
        }
    }

    @Command(name = "publish", mixinStandardHelpOptions = true,
            description = "Read a GGUF or safetensors file's header and publish the load a deployment makes of it.")
    static final class Publish implements Callable<Integer> {
        @Option(names = "--model", required = true, description = "the model file (GGUF or safetensors)")
        Path model;

        @Option(names = "--model-id", description = "stable model id (default: the file name)")
        String modelId;

        @Mixin
        TargetOptions target = new TargetOptions();

        @Mixin
        KafkaOptions kafka = new KafkaOptions();

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            StoredModel stored = ModelFiles.read(model);
            Progress hashing = new Progress(spec.commandLine().getErr(), "bytes hashed", stored.sizeBytes());
            stored = stored.withSha256(FileDigest.sha256(model, done -> hashing.update(done, "")));
            ModelLoaded load = ModelLoadedBuilder.build(UUID.randomUUID(), Instant.now(), modelId != null ? modelId : model.getFileName().toString(),
                    stored, target.target(), target.formPolicy(), Map.of("source", "file"), PRODUCER + " publish");
            try (PlacementEvents events = kafka.connect()) {
                RecordMetadata written = events.publish(load);
                out.printf(Locale.ROOT, "published load %s of %s (%d tensors, %s) for %s/%s to %s-%d@%d%n", load.getLoadId(), stored.name(),
                        load.getTensors().size(), ByteSizes.format(stored.tensorBytes()), target.deployment, target.release,
                        written.topic(), written.partition(), written.offset());
            }
            return 0;
        }
    }

    @Command(name = "explain", mixinStandardHelpOptions = true,
            description = "Show where every tensor of a model file would land for a deployment, without publishing anything.")
    static final class Explain implements Callable<Integer> {
        @Option(names = "--model", required = true, description = "the model file (GGUF or safetensors)")
        Path model;

        @Option(names = "--deployment", defaultValue = "local")
        String deployment;

        @Option(names = "--release", defaultValue = "local")
        String release;

        @Option(names = "--profile", defaultValue = "desktop")
        String profile;

        @Option(names = "--platform", defaultValue = "jvm")
        String platform;

        @Option(names = "--kernels", defaultValue = "all")
        String kernels;

        @Option(names = "--all", description = "list every tensor (default: the 20 largest)")
        boolean all;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            StoredModel stored = ModelFiles.read(model);
            PlannerProfile plannerProfile = PlannerProfile.byName(profile);
            StorageCapabilities caps = Platforms.byName(platform);
            Map<String, WeightForm> forms = new FormPolicy(plannerProfile, Platforms.kernels(kernels)).forms(stored.tensors());
            List<AllocationDecision> decisions = new ArrayList<>();
            for (StoredTensor tensor : stored.tensors()) {
                decisions.add(AllocationResolver.resolve(new PlanTensor(tensor.name(), tensor.format(), tensor.elementCount(),
                        tensor.storedBytes(), forms.get(tensor.name())), plannerProfile, caps));
            }
            Map<MemoryDomain, long[]> totals = new EnumMap<>(MemoryDomain.class);
            decisions.forEach(d -> {
                long[] t = totals.computeIfAbsent(d.domain(), k -> new long[2]);
                t[0]++;
                t[1] += d.residentBytes();
            });
            out.printf(Locale.ROOT, "%s: %d tensors, %s stored; profile %s on %s%n", stored.name(), stored.tensors().size(),
                    ByteSizes.format(stored.tensorBytes()), plannerProfile.name(), platform);
            totals.forEach((domain, t) -> out.printf(Locale.ROOT, "  %-13s %5d tensors  %10s%n", domain, t[0], ByteSizes.format(t[1])));
            decisions.stream().sorted((a, b) -> Long.compare(b.residentBytes(), a.residentBytes())).limit(all ? Long.MAX_VALUE : 20)
                    .forEach(d -> out.println("  " + d.explanation()));
            return 0;
        }
    }

    @Command(name = "simulate", mixinStandardHelpOptions = true,
            description = "Publish a simulated fleet: every deployment loads every model on every release, with release drift.")
    static final class Simulate implements Callable<Integer> {
        @Option(names = "--deployments", defaultValue = "8", description = "deployments (default: ${DEFAULT-VALUE})")
        int deployments;

        @Option(names = "--releases", defaultValue = "r1,r2", split = ",", description = "releases, oldest first (default: ${DEFAULT-VALUE})")
        List<String> releases;

        @Option(names = "--models", defaultValue = "llama-3.2-1b-q4km,qwen2.5-0.5b-q8_0", split = ",",
                description = "models from the catalog: llama-3.2-1b-q4km, qwen2.5-0.5b-q8_0, bitnet-2b-tq2_0, smollm2-360m-f16 (default: ${DEFAULT-VALUE})")
        List<String> models;

        @Option(names = "--drift", description = "release drift, repeatable: r2:dequantize=*ffn_down*, r2:unservable=Q6_K, r2:threshold=1048576")
        List<String> drift = new ArrayList<>();

        @Option(names = "--seed", defaultValue = "42", description = "random seed; the same seed gives the same fleet, load ids included (default: ${DEFAULT-VALUE})")
        long seed;

        @Mixin
        KafkaOptions kafka = new KafkaOptions();

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            List<Drift> rules = drift.stream().map(d -> Drift.parse(d, releases)).toList();
            FleetSimulator fleet = new FleetSimulator(seed, deployments, releases, models.stream().map(ModelCatalog::byId).toList(),
                    rules, Instant.parse("2026-11-01T00:00:00Z"));
            Progress progress = new Progress(spec.commandLine().getErr(), "loads", fleet.loadCount());
            long tensors = 0;
            int published = 0;
            List<CompletableFuture<RecordMetadata>> pending = new ArrayList<>();
            try (PlacementEvents events = kafka.connect()) {
                for (ModelLoaded load : fleet) {
                    pending.add(events.publishAsync(load));
                    tensors += load.getTensors().size();
                    if (pending.size() >= 200) {
                        published += await(pending);
                    }
                    progress.update(published + pending.size(), tensors + " tensors");
                }
                published += await(pending);
                progress.update(published, tensors + " tensors");
            }
            spec.commandLine().getOut().printf(Locale.ROOT, "simulated %d loads (%d deployments x %d releases x %d models, %d tensors) to %s in %.1f s%n",
                    published, deployments, releases.size(), models.size(), tensors, kafka.topic, progress.seconds());
            return 0;
        }

        private static int await(List<CompletableFuture<RecordMetadata>> pending) {
            int done = 0;
            for (CompletableFuture<RecordMetadata> future : pending) {
                try {
                    future.join();
                    done++;
                } catch (java.util.concurrent.CompletionException e) {
                    throw new IllegalStateException("publishing failed after " + done + " loads: " + e.getCause().getMessage(), e.getCause());
                }
            }
            pending.clear();
            return done;
        }
    }

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[]{PRODUCER};
        }
    }

    static String version() {
        Properties properties = new Properties();
        try (InputStream in = ProducerCli.class.getResourceAsStream("/producer.properties")) {
            if (in != null) {
                properties.load(in);
            }
        } catch (IOException e) {
            return "dev";
        }
        return properties.getProperty("version", "dev");
    }
}
