package dev.placementaudit.producer.cli;

import dev.placementaudit.core.format.TensorEncodings;
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
import dev.placementaudit.producer.publish.PublishException;
import dev.placementaudit.producer.sample.SampleModelFile;
import dev.placementaudit.producer.simulate.Drift;
import dev.placementaudit.producer.simulate.FleetSimulator;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.service.Settings;
import dev.placementaudit.service.cli.CliErrors;
import dev.placementaudit.service.cli.CommandFailure;
import dev.placementaudit.service.cli.ConfDir;
import dev.placementaudit.service.cli.KafkaReachability;
import dev.placementaudit.service.cli.ProjectVersion;
import org.apache.kafka.clients.producer.RecordMetadata;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/** {@code producer publish|simulate|explain|sample-model}: how model loads enter the pipeline. */
@Command(name = "producer", mixinStandardHelpOptions = true, versionProvider = ProjectVersion.class,
        description = "Turns model loads into ModelLoaded events on Kafka.",
        subcommands = {ProducerCli.Publish.class, ProducerCli.Simulate.class, ProducerCli.Explain.class, ProducerCli.SampleModel.class})
public final class ProducerCli {
    private static final String PROFILES = "planner profile: mobile-2gb, edge, desktop, native, or '<name> (strict)' (default: ${DEFAULT-VALUE})";
    private static final String PLATFORMS = "jvm, android, native, nomap, js, wasm, browser (default: ${DEFAULT-VALUE})";
    private static final String KERNELS = "encodings the runtime's kernels read: all, dense-only, or a list like Q4_K,Q6_K (default: ${DEFAULT-VALUE})";
    /** Loads sent but not yet acknowledged: enough to keep batches full, few enough to stop soon after a failure. */
    private static final int MAX_IN_FLIGHT = 200;

    static final String PRODUCER = "placement-audit-producer/" + ProjectVersion.get();

    @Option(names = CliErrors.VERBOSE, scope = CommandLine.ScopeType.INHERIT, description = "print the stack trace of a failure")
    boolean verbose;

    public static void main(String[] args) {
        AvroTrust.install();
        System.exit(commandLine().execute(args));
    }

    public static CommandLine commandLine() {
        return CliErrors.install(new CommandLine(new ProducerCli()));
    }

    /** Kafka connection options shared by the commands that publish. */
    static final class KafkaOptions {
        @Option(names = "--bootstrap-servers", paramLabel = "HOST:PORT[,...]",
                description = "Kafka bootstrap servers (default: kafka.bootstrap.servers, env KAFKA_BOOTSTRAP_SERVERS or PA_KAFKA_BOOTSTRAP_SERVERS)")
        String bootstrapServers;

        @Option(names = "--topic", defaultValue = "model-loads", description = "topic to publish to (default: ${DEFAULT-VALUE})")
        String topic;

        @Option(names = "--config", paramLabel = "FILE", description = "properties file with kafka.* client settings (SASL, TLS, ...) "
                + "(default: conf/producer.properties of the distribution, or of $PA_CONF_DIR)")
        Path config;

        @Option(names = "--max-wait", paramLabel = "DURATION", description = "longest wait for the broker, to connect and then per publish, "
                + "e.g. 10s (default: connect.timeout, env PA_CONNECT_TIMEOUT, else 10s)")
        String maxWait;

        /** Checks the broker answers and the topic exists within the bound, then opens the publisher. */
        PlacementEvents connect() {
            Map<String, String> overrides = new LinkedHashMap<>();
            if (bootstrapServers != null) {
                overrides.put("kafka.bootstrap.servers", bootstrapServers);
            }
            if (maxWait != null) {
                overrides.put(Settings.CONNECT_TIMEOUT, maxWait);
            }
            Settings settings = Settings.load(ConfDir.orDefault(config, "producer.properties"), overrides);
            Map<String, Object> kafka = settings.kafkaClientConfig();
            Duration wait = settings.connectTimeout();
            KafkaReachability.check(kafka, wait, List.of(topic));
            return PlacementEvents.connect(kafka, topic, wait);
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

        @Option(names = "--profile", defaultValue = "desktop", description = PROFILES)
        String profile;

        @Option(names = "--platform", defaultValue = "jvm", description = PLATFORMS)
        String platform;

        @Option(names = "--kernels", defaultValue = "all", description = KERNELS)
        String kernels;

        @Option(names = "--servable", split = ",", paramLabel = "ENCODING", description = "encodings a loader serves from a mapping (default: SKaiNET #1192's set)")
        List<String> servable;

        @Option(names = "--weights-mapped", paramLabel = "true|false", description = "override whether the profile asks for weights to be mapped")
        Boolean weightsMapped;

        PlannerProfile plannerProfile() {
            PlannerProfile named = PlannerProfile.byName(profile);
            return weightsMapped == null ? named : named.withWeightsMapped(weightsMapped);
        }

        StorageCapabilities capabilities() {
            StorageCapabilities caps = Platforms.byName(platform);
            if (servable != null) {
                caps = caps.withMappedServableEncodings(servable.stream().map(TensorEncodings::parseKnown)
                        .collect(Collectors.toSet()));
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
        @Option(names = "--model", required = true, paramLabel = "FILE", description = "the model file (GGUF or safetensors)")
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
                stored = stored.withSha256(FileDigest.sha256(model, done -> hashing.update(done, "")));
                ModelLoaded load = ModelLoadedBuilder.build(UUID.randomUUID(), Instant.now(), modelId != null ? modelId : model.getFileName().toString(),
                        stored, target.target(), forms, Map.of("source", "file"), PRODUCER + " publish");
                RecordMetadata written = published(() -> events.publish(load));
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
        @Option(names = "--model", required = true, paramLabel = "FILE", description = "the model file (GGUF or safetensors)")
        Path model;

        @Option(names = "--profile", defaultValue = "desktop", description = PROFILES)
        String profile;

        @Option(names = "--platform", defaultValue = "jvm", description = PLATFORMS)
        String platform;

        @Option(names = "--kernels", defaultValue = "all", description = KERNELS)
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
            stored.warnings().forEach(warning -> out.println("  warning: " + warning));
            totals.forEach((domain, t) -> out.printf(Locale.ROOT, "  %-13s %5d tensors  %10s%n", domain, t[0], ByteSizes.format(t[1])));
            Set<String> estimated = stored.tensors().stream().filter(StoredTensor::sizeEstimated).map(StoredTensor::name)
                    .collect(Collectors.toSet());
            decisions.stream().sorted((a, b) -> Long.compare(b.residentBytes(), a.residentBytes())).limit(all ? Long.MAX_VALUE : 20)
                    .forEach(d -> out.println("  " + d.explanation() + (estimated.contains(d.tensorName()) ? " [size estimated]" : "")));
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

        @Option(names = "--drift", paramLabel = "RULE", description = "release drift, repeatable: r2:dequantize=*ffn_down*, r2:unservable=Q6_K, r2:threshold=1048576")
        List<String> drift = new ArrayList<>();

        @Option(names = "--seed", defaultValue = "42", description = "random seed; the same seed gives the same fleet, load ids included (default: ${DEFAULT-VALUE})")
        long seed;

        @Option(names = "--start", paramLabel = "INSTANT", defaultValue = "2026-11-01T00:00:00Z",
                description = "when the first release's loads happen; each later release a day after the one before (default: ${DEFAULT-VALUE})")
        String start;

        @Option(names = "--late", paramLabel = "PERCENT", defaultValue = "0",
                description = "this share of each release's loads is reported late: published after the next release's loads, dated when "
                        + "it happened (default: ${DEFAULT-VALUE})")
        double latePercent;

        @Mixin
        KafkaOptions kafka = new KafkaOptions();

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws InterruptedException {
            if (deployments < 1) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--deployments must be at least 1, got " + deployments);
            }
            if (!(latePercent >= 0 && latePercent <= 100)) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--late must be a percentage from 0 to 100, got " + latePercent);
            }
            Instant first;
            try {
                first = Instant.parse(start);
            } catch (DateTimeParseException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--start must be an instant such as 2026-11-01T00:00:00Z, got '"
                        + start + "'");
            }
            List<Drift> rules = drift.stream().map(d -> Drift.parse(d, releases)).toList();
            FleetSimulator fleet = new FleetSimulator(seed, deployments, releases, models.stream().map(ModelCatalog::byId).toList(),
                    rules, first, latePercent / 100);
            Progress progress = new Progress(spec.commandLine().getErr(), "loads acknowledged", fleet.loadCount());
            Acknowledgements acks = new Acknowledgements(MAX_IN_FLIGHT);
            long tensors = 0;
            try (PlacementEvents events = kafka.connect()) {
                for (ModelLoaded load : fleet) {
                    if (!acks.acquireUnlessFailed()) {
                        break;
                    }
                    int size = load.getTensors().size();
                    events.publishAsync(load).whenComplete((metadata, error) -> acks.done(load, size, error));
                    tensors += size;
                    progress.update(acks.acknowledged(), acks.tensors() + " tensors");
                }
                acks.awaitAll();
                progress.update(acks.acknowledged(), acks.tensors() + " tensors");
                if (acks.failure() != null) {
                    throw new CommandFailure("simulation stopped: " + events.describeFailure(acks.failedLoad(), acks.failure()).getMessage()
                            + "; " + acks.acknowledged() + " of " + fleet.loadCount() + " loads were acknowledged before it", acks.failure());
                }
            }
            spec.commandLine().getOut().printf(Locale.ROOT, "simulated %d loads (%d deployments x %d releases x %d models, %d tensors) to %s in %.1f s%n",
                    acks.acknowledged(), deployments, releases.size(), models.size(), tensors, kafka.topic, progress.seconds());
            return 0;
        }
    }

    @Command(name = "sample-model", mixinStandardHelpOptions = true,
            description = "Write a model file with a real model's tensor layout and no weights (sparse: a few KB on disk), "
                    + "to try explain and publish without downloading a model.")
    static final class SampleModel implements Callable<Integer> {
        @Option(names = "--layout", required = true, completionCandidates = LayoutIds.class,
                description = "the model whose layout to write: ${COMPLETION-CANDIDATES}")
        String layout;

        @Option(names = "--out", required = true, paramLabel = "FILE", description = "where to write it; a name ending in .safetensors "
                + "gets the safetensors layout unless --format says otherwise")
        Path out;

        @Option(names = "--format", description = "GGUF (quantized, as llama.cpp writes it) or SAFETENSORS (the BF16 checkpoint, "
                + "as Hugging Face writes it) (default: from the file name, else GGUF)")
        SampleModelFile.Format format;

        @Option(names = "--force", description = "overwrite FILE if it exists")
        boolean force;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws IOException {
            ModelCatalog.Archetype model = ModelCatalog.byId(layout);
            if (Files.isDirectory(out)) {
                throw new CommandFailure(out + " is a directory; --out takes a file name such as model.gguf");
            }
            if (Files.exists(out) && !force) {
                throw new CommandFailure(out + " exists; pass --force to overwrite it");
            }
            SampleModelFile.Format chosen = format != null ? format
                    : out.getFileName().toString().endsWith(".safetensors") ? SampleModelFile.Format.SAFETENSORS : SampleModelFile.Format.GGUF;
            long size = SampleModelFile.write(model, chosen, out);
            spec.commandLine().getOut().printf(Locale.ROOT, "wrote %s: %s layout of %s, %d tensors, %s (tensor data is a sparse hole of zeros)%n",
                    out, chosen, model.displayName(), model.layout().size(), ByteSizes.format(size));
            return 0;
        }
    }

    /** The catalog's model ids, for {@code --layout}'s help and completion. */
    static final class LayoutIds implements Iterable<String> {
        @Override
        public Iterator<String> iterator() {
            return ModelCatalog.ALL.stream().map(ModelCatalog.Archetype::id).iterator();
        }
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
