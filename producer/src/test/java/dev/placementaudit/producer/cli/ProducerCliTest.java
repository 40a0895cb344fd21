package dev.placementaudit.producer.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.placementaudit.core.format.GgmlType;
import dev.placementaudit.events.EncodingRequestKind;
import dev.placementaudit.events.FileFormat;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.events.TensorResidency;
import dev.placementaudit.producer.gguf.GgufFile;
import dev.placementaudit.producer.gguf.GgufReader;
import dev.placementaudit.producer.gguf.GgufTestFile;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TopicReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.placementaudit.producer.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

@ExtendWith(KafkaBrokerExtension.class)
class ProducerCliTest {
    private static final EventSerde<ModelLoaded> LOADS = EventSerde.of(ModelLoaded.class);

    @TempDir
    Path dir;

    private Path model() throws Exception {
        return new GgufTestFile()
                .string("general.name", "Tiny Llama")
                .tensor("token_embd.weight", 14, GgmlType.Q6_K.bytesFor(256L * 1024), 256, 1024)
                .tensor("blk.0.attn_norm.weight", 0, 256 * 4, 256)
                .tensor("blk.0.attn_q.weight", 12, GgmlType.Q4_K.bytesFor(256L * 2048), 256, 2048)
                .tensor("blk.0.ffn_down.weight", 11, GgmlType.Q3_K.bytesFor(256L * 2048), 2048, 256)
                .writeTo(dir.resolve("tiny.gguf"));
    }

    @Test
    void publishesALoadThatMatchesTheFile(KafkaBroker broker) throws Exception {
        Path file = model();
        String topic = KafkaBroker.uniqueTopic("model-loads");
        broker.createTopics(1, topic);

        CliRun run = run("publish", "--model", file.toString(), "--deployment", "phone-7", "--release", "2026.12.1",
                "--profile", "edge", "--platform", "android", "--kernels", "Q4_K,Q6_K",
                "--bootstrap-servers", broker.bootstrapServers(), "--topic", topic);

        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(run.out()).contains("published load").contains("4 tensors").contains("phone-7/2026.12.1");
        ModelLoaded load = LOADS.decode(TopicReader.readCommitted(broker, topic, 1).get(0).value());
        GgufFile gguf = GgufReader.read(file);
        assertThat(load.getDeployment().getId()).isEqualTo("phone-7");
        assertThat(load.getModel().getName()).isEqualTo("Tiny Llama");
        assertThat(load.getModel().getFileFormat()).isEqualTo(FileFormat.GGUF);
        assertThat(load.getModel().getSizeBytes()).isEqualTo(Files.size(file));
        assertThat(load.getModel().getSha256()).isEqualTo(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file))));
        assertThat(load.getProfile().getName()).isEqualTo("edge");
        assertThat(load.getProfile().getWeightsMapped()).isTrue();
        assertThat(load.getTensors()).extracting(TensorInfo::getName).containsExactly("token_embd.weight", "blk.0.attn_norm.weight",
                "blk.0.attn_q.weight", "blk.0.ffn_down.weight");
        for (int i = 0; i < gguf.tensors().size(); i++) {
            TensorInfo tensor = load.getTensors().get(i);
            assertThat(tensor.getStoredBytes()).isEqualTo(gguf.tensors().get(i).bytes());
            assertThat(tensor.getFileOffset()).isEqualTo(gguf.tensors().get(i).absoluteOffset());
            assertThat(tensor.getShape()).isEqualTo(gguf.tensors().get(i).dims());
            assertThat(tensor.getForm().getResidency()).isEqualTo(TensorResidency.MAPPED);
        }
        assertThat(load.getTensors().get(2).getEncoding()).isEqualTo("Q4_K");
        assertThat(load.getTensors().get(2).getForm().getEncoding()).isEqualTo(EncodingRequestKind.KEEP);
        assertThat(load.getTensors().get(3).getEncoding()).isEqualTo("Opaque:Q3_K");
        assertThat(load.getTensors().get(3).getForm().getEncoding()).as("no Q3_K kernel: dequantized").isEqualTo(EncodingRequestKind.DEQUANTIZE_TO);
    }

    @Test
    void anUnreachableBrokerIsNamedWithinTheWait() throws Exception {
        Path file = model();
        long started = System.nanoTime();

        CliRun run = run("publish", "--model", file.toString(), "--deployment", "d", "--release", "r",
                "--bootstrap-servers", "127.0.0.1:1", "--max-wait", "2s");

        assertThat(run.exit()).isEqualTo(2);
        assertThat(run.err()).contains("no Kafka broker at 127.0.0.1:1").contains("within 2 s");
        assertThat((System.nanoTime() - started) / 1e9).isLessThan(20);
    }

    @Test
    void aStrictProfileRefusesALoadItCouldNotRunAndPublishesNothing() throws Exception {
        CliRun run = run("publish", "--model", model().toString(), "--deployment", "d", "--release", "r",
                "--profile", "mobile-2gb", "--platform", "android", "--kernels", "dense-only", "--bootstrap-servers", "127.0.0.1:1");

        assertThat(run.exit()).isEqualTo(2);
        assertThat(run.err()).contains("strict profile 'mobile-2gb' refuses to dequantize 3 tensor(s)").contains("blk.0.ffn_down.weight (Q3_K)");
    }

    @Test
    void aCorruptFileIsRefusedWithItsOffset() throws Exception {
        Path file = new GgufTestFile().tensor("w", 0, 1024, 256).truncateBy(10).writeTo(dir.resolve("cut.gguf"));

        CliRun run = run("explain", "--model", file.toString());

        assertThat(run.exit()).isEqualTo(2);
        assertThat(run.err()).contains("cut.gguf at byte").contains("truncated");
    }

    /** explain takes --format json as every query does (issue 56): every tensor, its domain and reason, and the totals. */
    @Test
    void explainsAsJson() throws Exception {
        CliRun run = run("explain", "--model", model().toString(), "--profile", "edge", "--platform", "android", "--kernels", "Q4_K,Q6_K",
                "--format", "json");

        assertThat(run.exit()).as(run.err()).isZero();
        JsonNode doc = new ObjectMapper().readTree(run.out());
        assertThat(doc.get("model").asText()).isEqualTo("Tiny Llama");
        assertThat(doc.get("decisions")).hasSize(4);
        assertThat(doc.get("decisions").findValuesAsText("tensor")).contains("blk.0.attn_q.weight", "blk.0.ffn_down.weight");
        JsonNode ffnDown = null;
        for (JsonNode d : doc.get("decisions")) {
            if (d.get("tensor").asText().equals("blk.0.ffn_down.weight")) {
                ffnDown = d;
            }
        }
        assertThat(ffnDown.get("domain").asText()).isEqualTo("HOST_OFFHEAP");
        assertThat(ffnDown.get("explanation").asText()).contains("mapping asked, but it is re-encoded at load");
        long total = 0;
        for (JsonNode domain : doc.get("domains")) {
            total += domain.get("tensors").asLong();
        }
        assertThat(total).isEqualTo(4);
    }

    @Test
    void explainsWhereEveryTensorWouldLand() throws Exception {
        CliRun run = run("explain", "--model", model().toString(), "--profile", "edge", "--platform", "android", "--kernels", "Q4_K,Q6_K", "--all");

        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(run.out()).contains("Tiny Llama: 4 tensors")
                .contains("MMAP_FILE").contains("HOST_OFFHEAP")
                .contains("blk.0.attn_q.weight: MMAP_FILE/MODEL")
                .contains("blk.0.ffn_down.weight: HOST_OFFHEAP/MODEL \u2014 mapping asked, but it is re-encoded at load");
    }

    @Test
    void simulatesAFleetWithProgressAndASummary(KafkaBroker broker) throws Exception {
        String topic = KafkaBroker.uniqueTopic("model-loads");
        broker.createTopics(2, topic);

        CliRun run = run("simulate", "--deployments", "3", "--releases", "r1,r2", "--models", "qwen2.5-0.5b-q8_0",
                "--drift", "r2:dequantize=*ffn_down*", "--bootstrap-servers", broker.bootstrapServers(), "--topic", topic);

        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(run.err()).contains("100%").contains("6/6 loads");
        assertThat(run.out()).contains("simulated 6 loads (3 deployments x 2 releases x 1 models");
        List<ModelLoaded> loads = TopicReader.readCommitted(broker, topic, 6).stream().map(r -> LOADS.decode(r.value())).toList();
        assertThat(loads).hasSize(6).extracting(ModelLoaded::getRelease).containsOnly("r1", "r2");
        assertThat(loads).extracting(l -> l.getDeployment().getId()).containsOnly("android-000", "edge-001", "server-002");
    }

    /** The help says which commands need Kafka: explain, sample-model, load and observe need none (issue 56). */
    @Test
    void theHelpSaysWhichCommandsNeedKafka() {
        CliRun run = run("--help");

        assertThat(run.exit()).isZero();
        assertThat(run.out().replaceAll("\\s+", " ")).contains("publish, simulate and load --publish send them to Kafka")
                .contains("explain, sample-model, load and observe work on this machine alone, no Kafka needed");
    }

    /** A fleet of its own beside one in the store (the README tour's, beside the demo's): its deployments named apart (issue 56). */
    @Test
    void simulateWithADeploymentPrefixNamesItsFleetApart(KafkaBroker broker) throws Exception {
        String topic = KafkaBroker.uniqueTopic("model-loads");
        broker.createTopics(1, topic);

        CliRun run = run("simulate", "--deployments", "2", "--releases", "r1", "--models", "qwen2.5-0.5b-q8_0", "--deployment-prefix", "lab-",
                "--bootstrap-servers", broker.bootstrapServers(), "--topic", topic);

        assertThat(run.exit()).as(run.err()).isZero();
        List<ModelLoaded> loads = TopicReader.readCommitted(broker, topic, 2).stream().map(r -> LOADS.decode(r.value())).toList();
        assertThat(loads).extracting(l -> l.getDeployment().getId()).containsExactlyInAnyOrder("lab-android-000", "lab-edge-001");
    }

    @Test
    void simulateWithObserveReportsEachLoadsDecisionsAndPublishesItsObservationAfterIt(KafkaBroker broker) throws Exception {
        String topic = KafkaBroker.uniqueTopic("model-loads");
        String observations = KafkaBroker.uniqueTopic("load-observations");
        broker.createTopics(2, topic, observations);

        CliRun run = run("simulate", "--deployments", "2", "--releases", "r1,r2", "--models", "qwen2.5-0.5b-q8_0", "--observe",
                "--drift", "r2:leak=512MB", "--bootstrap-servers", broker.bootstrapServers(), "--topic", topic,
                "--observations-topic", observations);

        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(run.out()).contains("simulated 4 loads").contains("each with its observation to " + observations);
        List<ModelLoaded> loads = TopicReader.readCommitted(broker, topic, 4).stream().map(r -> LOADS.decode(r.value())).toList();
        assertThat(loads).allSatisfy(l -> assertThat(l.getTensors()).allSatisfy(t -> assertThat(t.getRuntime()).isNotNull()));
        List<LoadObserved> seen = TopicReader.readCommitted(broker, observations, 4).stream()
                .map(r -> EventSerde.of(LoadObserved.class).decode(r.value())).toList();
        assertThat(seen).extracting(LoadObserved::getLoadId).containsExactlyInAnyOrderElementsOf(loads.stream().map(ModelLoaded::getLoadId).toList());
    }

    @Test
    void leakDriftWithoutObserveIsRefusedBeforeAnythingIsPublished() {
        CliRun run = run("simulate", "--drift", "r2:leak=512MB", "--bootstrap-servers", "127.0.0.1:1");

        assertThat(run.exit()).isEqualTo(2);
        assertThat(run.err()).contains("leak and diverge drift are what a device observes: add --observe");
    }

    @Test
    void simulateStopsAtTheFirstLoadTheBrokerRefusesAndClaimsOnlyWhatWasAcknowledged(KafkaBroker broker) throws Exception {
        String topic = KafkaBroker.uniqueTopic("tiny-loads");
        try (Admin admin = Admin.create(broker.clientConfig())) {
            // Every simulated load is larger than this, so the broker refuses each one.
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(Map.of("max.message.bytes", "512")))).all().get(30, TimeUnit.SECONDS);
        }

        CliRun run = run("simulate", "--deployments", "50", "--releases", "r1,r2", "--bootstrap-servers", broker.bootstrapServers(), "--topic", topic);

        assertThat(run.exit()).as(run.err()).isEqualTo(2);
        assertThat(run.err()).contains("error: simulation stopped: load ").contains("is too large for one Kafka record")
                .contains("0 of 200 loads were acknowledged before it");
        assertThat(run.err()).doesNotContain("100%").doesNotContain("\tat ");
        assertThat(run.err().lines().filter(l -> l.contains("loads acknowledged"))).allMatch(l -> l.contains(" 0/200 loads acknowledged"));
        assertThat(run.out()).isEmpty();
        assertThat(TopicReader.readCommitted(broker, topic, 0)).isEmpty();
    }

    @Test
    void explainSaysWhichSizesAreEstimated() throws Exception {
        // NVFP4 (type 40) is newer than this reader: its size is the gap to the next tensor, and explain says so.
        Path file = new GgufTestFile().tensor("blk.0.ffn_up.weight", 40, 4096, 1024, 8).tensor("output_norm.weight", 0, 1024, 256)
                .writeTo(dir.resolve("nvfp4.gguf"));

        CliRun run = run("explain", "--model", file.toString());

        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(run.out()).contains("warning: tensor 'blk.0.ffn_up.weight' has unknown ggml type 40; its size is estimated as the 4096-byte gap");
        assertThat(run.out().lines().filter(l -> l.contains("[size estimated]")))
                .singleElement().asString().startsWith("  blk.0.ffn_up.weight");
    }

    @Test
    void aPublishedLoadFlagsTheTensorsWhoseSizeIsEstimated(KafkaBroker broker) throws Exception {
        Path file = new GgufTestFile().tensor("blk.0.ffn_up.weight", 40, 4096, 1024, 8).tensor("output_norm.weight", 0, 1024, 256)
                .writeTo(dir.resolve("nvfp4.gguf"));
        String topic = KafkaBroker.uniqueTopic("model-loads");
        broker.createTopics(1, topic);

        CliRun run = run("publish", "--model", file.toString(), "--deployment", "d", "--release", "r",
                "--bootstrap-servers", broker.bootstrapServers(), "--topic", topic);

        assertThat(run.exit()).as(run.err()).isZero();
        ModelLoaded load = LOADS.decode(TopicReader.readCommitted(broker, topic, 1).get(0).value());
        assertThat(load.getTensors()).extracting(TensorInfo::getName, TensorInfo::getStoredBytes, TensorInfo::getSizeEstimated)
                .containsExactly(tuple("blk.0.ffn_up.weight", 4096L, true), tuple("output_norm.weight", 1024L, false));
    }

    @Test
    void aSampleModelIsWrittenOnceAndNotOverwrittenUnlessForced() throws Exception {
        Path file = dir.resolve("sample.gguf");

        CliRun first = run("sample-model", "--layout", "bitnet-2b-tq2_0", "--out", file.toString());
        CliRun again = run("sample-model", "--layout", "bitnet-2b-tq2_0", "--out", file.toString());
        CliRun forced = run("sample-model", "--layout", "smollm2-360m-f16", "--out", file.toString(), "--force");
        CliRun explained = run("explain", "--model", file.toString());

        assertThat(first.exit()).as(first.err()).isZero();
        assertThat(first.out()).contains("GGUF layout of BitNet b1.58 2B TQ2_0");
        assertThat(again.exit()).isEqualTo(2);
        assertThat(again.err()).contains("exists; pass --force to overwrite it");
        assertThat(forced.exit()).as(forced.err()).isZero();
        assertThat(explained.out()).startsWith("SmolLM2 360M F16: ");
    }

    @Test
    void loadHoldsTheModelAsPlannedAndPublishesTheLoadersDecisionsAndWhatItMeasured(KafkaBroker broker) throws Exception {
        Path file = model();
        String loads = KafkaBroker.uniqueTopic("model-loads");
        String observations = KafkaBroker.uniqueTopic("load-observations");
        broker.createTopics(1, loads, observations);

        CliRun run = run("load", "--model", file.toString(), "--deployment", "phone-7", "--release", "2026.12.1",
                "--profile", "edge", "--platform", "android", "--kernels", "Q4_K,Q6_K", "--publish",
                "--bootstrap-servers", broker.bootstrapServers(), "--topic", loads, "--observations-topic", observations);

        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(run.out()).startsWith("loaded Tiny Llama: 4 tensors in ")
                .containsPattern("off-heap +2 MB +2 MB +2 MB +the direct buffer pool")
                .contains("direct memory cap: ")
                .contains("published load ").contains(" with the loader's decisions to " + loads + "-0@0 and its observation to " + observations + "-0@0");
        ModelLoaded load = LOADS.decode(TopicReader.readCommitted(broker, loads, 1).get(0).value());
        assertThat(load.getDeployment().getId()).isEqualTo("phone-7");
        assertThat(load.getTensors()).extracting(t -> t.getRuntime().getDomain().name())
                .containsExactly("MMAP_FILE", "MMAP_FILE", "MMAP_FILE", "HOST_OFFHEAP");
        assertThat(load.getTensors().get(3).getRuntime().getResidentBytes()).as("Q3_K dequantized to FP32").isEqualTo(256 * 2048 * 4);
        LoadObserved observed = EventSerde.of(LoadObserved.class).decode(TopicReader.readCommitted(broker, observations, 1).get(0).value());
        assertThat(observed.getLoadId()).isEqualTo(load.getLoadId());
        assertThat(observed.getDeploymentId()).isEqualTo("phone-7");
        // The pool is the process's: the Kafka client holds a few direct bytes of its own meanwhile.
        assertThat(observed.getDirectAfterBytes() - observed.getDirectBeforeBytes()).isCloseTo(256 * 2048 * 4L,
                org.assertj.core.api.Assertions.within(1024L * 1024));
        assertThat(observed.getTensors()).extracting(t -> t.getName() + "=" + t.getDomain()).containsExactly("token_embd.weight=MMAP_FILE",
                "blk.0.attn_norm.weight=MMAP_FILE", "blk.0.attn_q.weight=MMAP_FILE", "blk.0.ffn_down.weight=HOST_OFFHEAP");
    }

    @Test
    void loadPrintsJsonAndNeedsNoBrokerWithoutPublish() throws Exception {
        CliRun run = run("load", "--model", model().toString(), "--profile", "desktop", "--platform", "jvm", "--format", "json");

        assertThat(run.exit()).as(run.err()).isZero();
        com.fasterxml.jackson.databind.JsonNode json = new com.fasterxml.jackson.databind.ObjectMapper().readTree(run.out());
        assertThat(json.get("model").asText()).isEqualTo("Tiny Llama");
        assertThat(json.get("tensors").asInt()).isEqualTo(4);
        assertThat(json.get("planned").get("offHeapBytes").asLong()).isEqualTo(json.get("held").get("offHeapBytes").asLong()).isPositive();
        // The direct pool is the process's: within a few pages of the plan (the bound is 5% and 1 MB).
        assertThat(json.get("observed").get("offHeapBytes").asLong()).isCloseTo(json.get("planned").get("offHeapBytes").asLong(),
                org.assertj.core.api.Assertions.within(64L * 1024));
        assertThat(json.get("published").isNull()).isTrue();
        assertThat(json.get("heldElsewhere")).isEmpty();
    }

    @Test
    void loadWithPublishButNoDeploymentSaysWhatItNeeds() throws Exception {
        CliRun run = run("load", "--model", model().toString(), "--publish", "--bootstrap-servers", "127.0.0.1:1");

        assertThat(run.exit()).isEqualTo(2);
        assertThat(run.err()).contains("--publish needs --deployment and --release").doesNotContain("Exception");
    }

    @Test
    void loadSaysWhenDirectMemoryIsCappedBelowThePlanInsteadOfAStackTrace() throws Exception {
        Path file = model();
        Process java = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:MaxDirectMemorySize=1m",
                "-cp", System.getProperty("java.class.path"), ProducerCli.class.getName(),
                "load", "--model", file.toString(), "--profile", "desktop", "--platform", "jvm", "--kernels", "Q4_K,Q6_K").start();
        assertThat(java.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String err = new String(java.getErrorStream().readAllBytes());

        assertThat(java.exitValue()).as(err).isEqualTo(2);
        assertThat(err).contains("off-heap, but direct memory is capped at 1 MB (-XX:MaxDirectMemorySize")
                .containsPattern("JAVA_OPTS=-XX:MaxDirectMemorySize=6\\dm").doesNotContain("\tat ");
        assertThat(new String(java.getInputStream().readAllBytes())).isEmpty();
    }
}
