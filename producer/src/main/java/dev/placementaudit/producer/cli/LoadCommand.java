package dev.placementaudit.producer.cli;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.collect.CollectorClient;
import dev.placementaudit.producer.collect.CollectorException;
import dev.placementaudit.producer.load.DomainBytes;
import dev.placementaudit.producer.load.LoadException;
import dev.placementaudit.producer.load.LoadedModel;
import dev.placementaudit.producer.load.MemoryProbe;
import dev.placementaudit.producer.load.ReferenceLoader;
import dev.placementaudit.producer.model.DeploymentTarget;
import dev.placementaudit.producer.model.FormPolicy;
import dev.placementaudit.producer.model.ModelLoadedBuilder;
import dev.placementaudit.producer.model.Platforms;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.collect.TokenFile;
import dev.placementaudit.producer.llamacpp.LlamaCppAudit;
import dev.placementaudit.producer.llamacpp.LlamaCppEvents;
import dev.placementaudit.producer.publish.PlacementEvents;
import dev.placementaudit.service.cli.CommandFailure;
import org.apache.kafka.clients.producer.RecordMetadata;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Files;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;

@Command(name = "load", mixinStandardHelpOptions = true,
        description = {"Load a model file the way its plan decides (mapped, off-heap and heap tensors held for real), measure what "
                + "this JVM then holds, and print planned against observed per domain.",
                "With --publish, publish the load with the loader's own decisions and what it measured (a LoadObserved)."})
final class LoadCommand implements Callable<Integer> {
    @Mixin ModelFileOption model = new ModelFileOption();

    @Option(names = "--model-id", description = "stable model id (default: the file name)") String modelId;

    @Mixin PlanOptions plan = new PlanOptions();

    @Option(names = "--deployment", description = "deployment id (required with --publish; default: local)") String deployment;

    @Option(names = "--release", description = "release of the runtime doing the load (required with --publish; default: local)") String release;

    @Option(names = "--cluster", defaultValue = "default", description = "cluster (default: ${DEFAULT-VALUE})") String cluster;

    @Option(names = "--host", description = "host (default: this machine's name)") String host;

    @Option(names = "--publish", description = "publish the load (with the loader's decisions) and its observation to Kafka") boolean publish;

    @Mixin KafkaOptions kafka = new KafkaOptions();

    @Option(names = "--observations-topic", defaultValue = PlacementEvents.OBSERVATIONS_TOPIC,
            description = "topic for the observation (default: ${DEFAULT-VALUE})") String observationsTopic;

    @Option(names = "--collector", paramLabel = "URL", description = "publish through a collector over HTTP(S) (e.g. https://collector:8083) "
            + "instead of Kafka; implies --publish. A certificate the JVM does not trust: JAVA_OPTS=-Djavax.net.ssl.trustStore=...") URI collector;

    @Option(names = "--token-file", paramLabel = "FILE", description = "the fleet's collector token (required with --collector)") Path tokenFile;

    @Option(names = "--spool", paramLabel = "DIR", description = "with --collector: keep what cannot be delivered in DIR, delivered first next time")
    Path spoolDir;

    @Mixin LlamaCppOptions llamaCpp = new LlamaCppOptions();

    @Option(names = "--generate", paramLabel = "N", description = "with --runtime llama.cpp: generate N tokens after the load, to show the "
            + "runtime really runs the model") int generate;

    @Option(names = "--format", defaultValue = "table", description = "table or json (default: ${DEFAULT-VALUE})") Format format;

    enum Format { table, json }

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        boolean llama = llamaCpp.llamaCpp();
        if (llama && format == Format.json) {
            throw new CommandFailure("--runtime llama.cpp reports as a table; --format json is not built for it yet");
        }
        publish |= collector != null;
        if (publish && (deployment == null || release == null)) {
            throw new CommandFailure((collector != null ? "--collector" : "--publish")
                    + " needs --deployment and --release: the load is published as that deployment's");
        }
        CollectorClient client = collector != null ? collectorClient() : null;
        String hostName = host != null ? host : System.getenv().getOrDefault("HOSTNAME", "localhost");
        // llama.cpp is a native runtime: its platform is native unless named, and its profile is its own (mmap or not).
        String platform = llama && !spec.commandLine().getParseResult().hasMatchedOption("--platform") ? "native" : plan.platform;
        if (llama && spec.commandLine().getParseResult().hasMatchedOption("--profile")) {
            throw new CommandFailure("--profile is SKaiNET's; llama.cpp plans by its own rules (--no-mmap for a load without the mapping)");
        }
        DeploymentTarget target = new DeploymentTarget(deployment != null ? deployment : "local", cluster, hostName,
                release != null ? release : "local", platform, Platforms.byName(platform));
        if (llama) {
            return loadThroughLlamaCpp(out, target, client);
        }
        StoredModel stored = model.read();
        requireOneFile(stored);
        FormPolicy forms = plan.formPolicy(plan.plannerProfile());
        ModelLoaded load;
        try {
            load = ModelLoadedBuilder.build(UUID.randomUUID(), Instant.now(), modelId(),
                    stored, target, forms, Map.of("source", "reference-loader"), ProducerCli.PRODUCER + " load");
        } catch (FormPolicy.LoadRefusedException e) {
            throw new CommandFailure(e.getMessage(), e);
        }
        // The broker before the load: a wrong address should not cost holding a model first.
        PlacementEvents events = publish && client == null ? kafka.connect(observationsTopic) : null;
        try (LoadedModel loaded = load(load)) {
            Map<String, Object> published = null;
            if (events != null || client != null) {
                published = publish(events, client, loaded.reported(), loaded.observation(Instant.now(), ProducerCli.PRODUCER + " load"));
            }
            if (format == Format.json) {
                json(out, stored, loaded, published);
            } else {
                table(out, stored, loaded, published);
            }
        } finally {
            if (events != null) {
                events.close();
            }
        }
        return 0;
    }

    private CollectorClient collectorClient() {
        if (tokenFile == null) {
            throw new CommandFailure("--collector needs --token-file: the file holding your fleet's token (placement-audit collector token makes one)");
        }
        String token;
        try {
            token = TokenFile.read(tokenFile);
        } catch (IllegalArgumentException e) {
            throw new CommandFailure(e.getMessage());
        }
        // Attempts and back-off as docs/collector.md says: 5, from 200 ms.
        CollectorClient.Builder builder = CollectorClient.builder(collector, token);
        if (spoolDir != null) {
            builder.spool(spoolDir, 256L << 20);
        }
        return builder.build();
    }

    /**
     * {@code --runtime llama.cpp}: the file loaded by real llama.cpp in a child JVM, reported per buffer; with
     * {@code --publish} (or {@code --collector}) the load, naming llama.cpp, its build and CPU, and what the process
     * measured go out as every other load does, the broker asked first so a wrong address costs no load.
     */
    private int loadThroughLlamaCpp(PrintWriter out, DeploymentTarget target, CollectorClient client) {
        PlacementEvents events = publish && client == null ? kafka.connect(observationsTopic) : null;
        try {
            Instant at = Instant.now();
            LlamaCppAudit audit = llamaCpp.load(out, model.file, generate);
            if (publish) {
                // Read after llama.cpp: a file it refuses is refused in its words.
                LlamaCppEvents.Events made = LlamaCppEvents.of(audit, model.read(), target, modelId(),
                        UUID.randomUUID(), at, Map.of("source", "llama.cpp"), ProducerCli.PRODUCER + " load --runtime llama.cpp");
                printPublished(out, publish(events, client, made.load(), made.observation()), "llama.cpp's placements");
            }
            return 0;
        } finally {
            if (events != null) {
                events.close();
            }
        }
    }

    /** The model id the load is published under: {@code --model-id}, else the file's name. */
    private String modelId() {
        return modelId != null ? modelId : model.file.getFileName().toString();
    }

    /** The load, then its observation: to Kafka, each acknowledged, or through the collector in one batch. */
    private Map<String, Object> publish(PlacementEvents events, CollectorClient client, ModelLoaded reported, LoadObserved observation) {
        if (events != null) {
            RecordMetadata loadAt = ProducerCli.published(() -> events.publish(reported));
            RecordMetadata observedAt = ProducerCli.published(() -> events.publishObservation(observation));
            Map<String, Object> published = new LinkedHashMap<>();
            published.put("loadId", reported.getLoadId().toString());
            published.put("load", loadAt.topic() + "-" + loadAt.partition() + "@" + loadAt.offset());
            published.put("observation", observedAt.topic() + "-" + observedAt.partition() + "@" + observedAt.offset());
            return published;
        }
        return throughCollector(client, reported, observation);
    }

    /** The load, then its observation, in one batch; what the collector said of them. */
    private Map<String, Object> throughCollector(CollectorClient client, ModelLoaded reported, LoadObserved observation) {
        CollectorClient.Delivery delivery;
        try {
            delivery = client.send(List.of(reported), List.of(observation));
        } catch (CollectorException e) {
            throw new CommandFailure(e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommandFailure("interrupted while publishing through " + collector, e);
        }
        if (!delivery.refused().isEmpty()) {
            CollectorClient.Refusal first = delivery.refused().get(0);
            throw new CommandFailure("the collector at " + collector + " refused " + first.kind() + "[" + first.index() + "]: " + first.code()
                    + " " + first.reason());
        }
        Map<String, Object> published = new LinkedHashMap<>();
        published.put("loadId", reported.getLoadId().toString());
        published.put("collector", collector.toString());
        published.put("accepted", delivery.accepted());
        published.put("spooled", delivery.spooled());
        published.put("spoolDelivered", delivery.drainedBatches());
        return published;
    }

    private LoadedModel load(ModelLoaded load) {
        try {
            return new ReferenceLoader().load(model.file, load, true);
        } catch (LoadException e) {
            throw new CommandFailure(e.getMessage(), e);
        }
    }

    /** The loader reads one file: a shard set's header describes tensors in other files. */
    private void requireOneFile(StoredModel stored) {
        try {
            if (stored.sizeBytes() > Files.size(model.file)) {
                throw new CommandFailure(model.file + " is one file of a sharded model: the reference loader loads single-file models");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void table(PrintWriter out, StoredModel stored, LoadedModel loaded, Map<String, Object> published) {
        out.printf(Locale.ROOT, "loaded %s: %d tensors in %.2f s; profile %s on %s%n", stored.name(), stored.tensors().size(),
                loaded.loadNanos() / 1e9, plan.plannerProfile().name(), plan.platform);
        DomainBytes planned = loaded.planned();
        DomainBytes held = loaded.runtime();
        DomainBytes observed = loaded.observed();
        out.printf(Locale.ROOT, "  %-9s %12s %12s %12s  %s%n", "domain", "planned", "held", "observed", "observed as");
        row(out, "heap", planned.heap(), held.heap(), observed.heap(), "heap in use, after minus before (a GC requested before)");
        row(out, "off-heap", planned.offHeap(), held.offHeap(), observed.offHeap(), "the direct buffer pool, after minus before");
        row(out, "mapped", planned.mapped(), held.mapped(), observed.mapped(), "the mapped buffer pool, after minus before");
        MemoryProbe.FileMappings file = loaded.fileMappings();
        if (file != null) {
            out.printf(Locale.ROOT, "  model file: %d mappings, %s mapped, %s resident (/proc/self/smaps)%n", file.mappings(),
                    ByteSizes.format(file.sizeBytes()), ByteSizes.format(file.residentBytes()));
        } else {
            out.println("  model file mappings: not measured (no /proc/self/smaps on this platform)");
        }
        Long anon = loaded.anonRssDelta();
        out.println("  anonymous RSS: " + (anon == null ? "not measured (no /proc/self/status)" : ByteSizes.format(anon) + " (/proc/self/status RssAnon)"));
        out.println("  direct memory cap: " + ByteSizes.format(ReferenceLoader.directMemoryCap()) + " (-XX:MaxDirectMemorySize)");
        List<String> departures = loaded.departures();
        if (!departures.isEmpty()) {
            out.println("  held elsewhere than planned (" + departures.size() + "):");
            departures.forEach(d -> out.println("    " + d));
        }
        if (published != null) {
            printPublished(out, published, "the loader's decisions");
        }
    }

    private void printPublished(PrintWriter out, Map<String, Object> published, String decisions) {
        if (published.containsKey("collector")) {
            int spooled = (Integer) published.get("spooled");
            out.println(spooled > 0 ? "the collector at " + published.get("collector") + " is unreachable: load " + published.get("loadId")
                    + " and its observation are kept in " + spoolDir + ", delivered first by the next run"
                    : "published load " + published.get("loadId") + " with " + decisions + " and its observation through the collector at "
                    + published.get("collector") + " (" + published.get("accepted") + " accepted"
                    + ((Integer) published.get("spoolDelivered") > 0 ? ", and " + published.get("spoolDelivered") + " spooled batches before them" : "") + ")");
        } else {
            out.printf(Locale.ROOT, "published load %s with %s to %s and its observation to %s%n", published.get("loadId"), decisions,
                    published.get("load"), published.get("observation"));
        }
    }

    private static void row(PrintWriter out, String domain, long planned, long held, long observed, String how) {
        out.printf(Locale.ROOT, "  %-9s %12s %12s %12s  %s%n", domain, ByteSizes.format(planned), ByteSizes.format(held), ByteSizes.format(observed), how);
    }


    private void json(PrintWriter out, StoredModel stored, LoadedModel loaded, Map<String, Object> published) {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("model", stored.name());
        doc.put("file", model.file.toString());
        doc.put("tensors", stored.tensors().size());
        doc.put("profile", plan.plannerProfile().name());
        doc.put("platform", plan.platform);
        doc.put("loadSeconds", loaded.loadNanos() / 1e9);
        doc.put("planned", domains(loaded.planned()));
        doc.put("held", domains(loaded.runtime()));
        doc.put("observed", domains(loaded.observed()));
        MemoryProbe.FileMappings file = loaded.fileMappings();
        doc.put("fileMappings", file == null ? null : Map.of("mappings", file.mappings(), "mappedBytes", file.sizeBytes(),
                "residentBytes", file.residentBytes()));
        doc.put("anonRssDeltaBytes", loaded.anonRssDelta());
        doc.put("directMemoryCapBytes", ReferenceLoader.directMemoryCap());
        doc.put("heldElsewhere", loaded.departures());
        doc.put("published", published);
        JsonOut.print(out, doc);
    }

    private static Map<String, Long> domains(DomainBytes bytes) {
        Map<String, Long> out = new LinkedHashMap<>();
        out.put("heapBytes", bytes.heap());
        out.put("offHeapBytes", bytes.offHeap());
        out.put("mappedBytes", bytes.mapped());
        return out;
    }
}
