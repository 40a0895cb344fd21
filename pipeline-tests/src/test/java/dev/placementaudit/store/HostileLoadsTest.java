package dev.placementaudit.store;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.Deployment;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ModelRef;
import dev.placementaudit.events.PlatformCapabilities;
import dev.placementaudit.events.ProfileSettings;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.ingest.IngestLoop;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.SampleEvents;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.testkit.TopicReader;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.pipeline.ResolverLoop;
import dev.placementaudit.worker.pipeline.ResolverWorker;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Hostile input through the real worker and the real store: 35 kinds of malformed or hostile ModelLoaded records,
 * interleaved with good loads and with odd-but-valid ones. The pipeline must keep flowing, and every record must end
 * either stored (a complete load) or dead-lettered with its reason: none lost, none stuck.
 */
@ExtendWith(KafkaBrokerExtension.class)
class HostileLoadsTest {
    private static final EventSerde<ModelLoaded> LOADS = EventSerde.of(ModelLoaded.class);
    private static final int MAX_TENSORS = 64;

    private static ModelLoaded good(String deployment) {
        return SampleEvents.edgeLoad(deployment, "r1", 2);
    }

    private static ModelLoaded with(UnaryOperator<ModelLoaded.Builder> change) {
        return change.apply(ModelLoaded.newBuilder(good("hostile"))).build();
    }

    private static ModelLoaded withTensor(UnaryOperator<TensorInfo.Builder> change) {
        ModelLoaded load = good("hostile");
        List<TensorInfo> tensors = new ArrayList<>(load.getTensors());
        tensors.set(1, change.apply(TensorInfo.newBuilder(tensors.get(1))).build());
        return ModelLoaded.newBuilder(load).setTensors(tensors).build();
    }

    private static ModelLoaded withDeployment(UnaryOperator<Deployment.Builder> change) {
        return with(b -> b.setDeployment(change.apply(Deployment.newBuilder(b.getDeployment())).build()));
    }

    private static ModelLoaded withModel(UnaryOperator<ModelRef.Builder> change) {
        return with(b -> b.setModel(change.apply(ModelRef.newBuilder(b.getModel())).build()));
    }

    /** What the worker must refuse, by kind: raw bytes that are no ModelLoaded, and ModelLoaded whose content is hostile. */
    private static Map<String, byte[]> hostile(StoreHarness h) {
        Map<String, byte[]> kinds = new LinkedHashMap<>();
        byte[] valid = LOADS.encode(good("x"));
        kinds.put("empty value", new byte[0]);
        kinds.put("random bytes", UUID.randomUUID().toString().getBytes(StandardCharsets.UTF_8));
        kinds.put("unknown schema fingerprint", new byte[]{(byte) 0xC3, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0});
        kinds.put("truncated load", java.util.Arrays.copyOf(valid, valid.length / 2));
        kinds.put("JSON text", "{\"loadId\": \"x\"}".getBytes(StandardCharsets.UTF_8));
        kinds.put("an AllocationDecided on the loads topic", EventSerde.of(AllocationDecided.class).encode(h.resolve(good("x")).decisions().get(0)));
        Map<String, ModelLoaded> content = new LinkedHashMap<>();
        content.put("no tensors", with(b -> b.setTensors(List.of())));
        content.put("duplicate tensor names", with(b -> {
            List<TensorInfo> t = new ArrayList<>(b.getTensors());
            t.add(t.get(1));
            return b.setTensors(t);
        }));
        content.put("too many tensors", with(b -> b.setTensors(SampleEvents.edgeLoad("x", "r", MAX_TENSORS).getTensors())));
        content.put("negative element count", withTensor(t -> t.setElementCount(-1)));
        content.put("negative stored bytes", withTensor(t -> t.setStoredBytes(-5)));
        content.put("shape that does not hold the elements", withTensor(t -> t.setShape(List.of(3L, 5L))));
        content.put("unknown dtype", withTensor(t -> t.setDtype("FP7")));
        content.put("unknown encoding", withTensor(t -> t.setEncoding("IQ9_ZZ")));
        content.put("bytes the encoding does not price", withTensor(t -> t.setStoredBytes(12345)));
        content.put("blank deployment id", withDeployment(d -> d.setId(" ")));
        content.put("blank release", with(b -> b.setRelease("")));
        content.put("blank model id", withModel(m -> m.setId("")));
        content.put("NUL in a tensor name", withTensor(t -> t.setName("blk.0.attn_q\u0000.weight")));
        content.put("NUL in the model name", withModel(m -> m.setName("Sample\u0000model")));
        content.put("escape sequence in the release", with(b -> b.setRelease("r1\u001b[31m")));
        content.put("control character in a label key", with(b -> b.setLabels(Map.of("te\u0007am", "x"))));
        content.put("DEL in a tensor name", withTensor(t -> t.setName("blk.0.attn_q\u007f.weight")));
        content.put("newline in a deployment id", withDeployment(d -> d.setId("phone\n7")));
        content.put("300,000-character deployment id", withDeployment(d -> d.setId("d".repeat(300_000))));
        content.put("1001-character tensor name", withTensor(t -> t.setName("w".repeat(1001))));
        content.put("501-character model name", withModel(m -> m.setName("m".repeat(501))));
        content.put("201-character cluster", withDeployment(d -> d.setCluster("c".repeat(201))));
        content.put("sha256 too short", withModel(m -> m.setSha256("abc")));
        content.put("sha256 not hex", withModel(m -> m.setSha256("z".repeat(64))));
        content.put("occurred in year 292,278,994", with(b -> b.setOccurredAt(Instant.ofEpochMilli(Long.MAX_VALUE / 2))));
        content.put("occurred before 1970", with(b -> b.setOccurredAt(Instant.parse("1969-07-20T20:17:40Z"))));
        content.put("negative model size", withModel(m -> m.setSizeBytes(-1)));
        content.put("blank profile name", with(b -> b.setProfile(ProfileSettings.newBuilder(b.getProfile()).setName(" ").build())));
        content.put("unknown mapped-servable encoding", with(b -> b.setPlatform(PlatformCapabilities.newBuilder(b.getPlatform())
                .setMappedServableEncodings(List.of("Q4_K", "NOPE")).build())));
        content.forEach((kind, load) -> kinds.put(kind, LOADS.encode(load)));
        return kinds;
    }

    /** Valid, if unusual: each must be stored like any other load. */
    private static List<ModelLoaded> odd() {
        return List.of(
                withTensor(t -> t.setName("blk.0.\uD83D\uDE80.weight")),
                with(b -> b.setRelease("r1\twith a tab")),
                withDeployment(d -> d.setId("d".repeat(200))),
                withModel(m -> m.setSha256("ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789")),
                with(b -> b.setLabels(Map.of("名前", "値"))),
                // An unpaired surrogate cannot travel: UTF-8 encoding (Avro's, as any) turns it into '?' on the producer's side.
                with(b -> b.setLabels(Map.of("team", "infra\uD800"))),
                withDeployment(d -> d.setHost("h\uDC00")));
    }

    @DatabaseTest
    void everyHostileRecordIsDeadLetteredAndEveryOtherLoadIsStored(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        String input = KafkaBroker.uniqueTopic("hostile-loads");
        broker.createTopics(2, input, input + ".dlq");
        Map<String, byte[]> hostile = hostile(h);
        assertThat(hostile).hasSizeGreaterThanOrEqualTo(30);
        List<ModelLoaded> stored = new ArrayList<>(odd());
        Map<Long, String> hostileByOffset = new java.util.HashMap<>();
        Set<String> storedIds = stored.stream().map(l -> l.getLoadId().toString()).collect(Collectors.toSet());

        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(broker.clientConfig(), new ByteArraySerializer(), new ByteArraySerializer())) {
            int i = 0;
            for (Map.Entry<String, byte[]> kind : hostile.entrySet()) {
                // One partition for the hostile records, so that an offset names one of them.
                RecordMetadata at = producer.send(new ProducerRecord<>(input, 0, ("hostile-" + i).getBytes(StandardCharsets.UTF_8), kind.getValue()))
                        .get(10, TimeUnit.SECONDS);
                hostileByOffset.put(at.offset(), kind.getKey());
                if (i++ % 5 == 0) {
                    ModelLoaded load = good("good-" + i);
                    stored.add(load);
                    storedIds.add(load.getLoadId().toString());
                }
            }
            for (ModelLoaded load : stored) {
                producer.send(new ProducerRecord<>(input, 1, load.getDeployment().getId().getBytes(StandardCharsets.UTF_8), LOADS.encode(load)))
                        .get(10, TimeUnit.SECONDS);
            }
        }

        Map<String, String> worker = Map.of("kafka.bootstrap.servers", broker.bootstrapServers(), "worker.input.topic", input,
                "worker.decisions.topic", h.decisions, "worker.resolved.topic", h.resolved, "worker.group.id", "w-" + input,
                "worker.instance.id", "w-" + input, "worker.http.port", "-1", "worker.poll.timeout", "200ms",
                "worker.max.tensors.per.load", Integer.toString(MAX_TENSORS), "worker.topics.create", "false");
        try (ResolverWorker w = ResolverWorker.start(WorkerConfig.from(Settings.of(worker)), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
             AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(90)).untilAsserted(() -> assertThat(h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE"))
                    .as("complete loads").isEqualTo(stored.size()));
            assertThat(w.state()).isEqualTo(ResolverLoop.State.RUNNING);
            assertThat(store.state()).isEqualTo(IngestLoop.State.RUNNING);
        }

        List<ConsumerRecord<byte[], byte[]>> dead = TopicReader.readCommitted(broker, input + ".dlq", hostile.size());
        Map<String, Long> deadByKind = new LinkedHashMap<>();
        for (ConsumerRecord<byte[], byte[]> record : dead) {
            long offset = Long.parseLong(new String(record.headers().lastHeader(DeadLetter.SOURCE_OFFSET).value(), StandardCharsets.UTF_8));
            assertThat(record.key()).hasSizeLessThanOrEqualTo(DeadLetter.MAX_KEY_BYTES);
            deadByKind.merge(hostileByOffset.getOrDefault(offset, "a good load at offset " + offset), 1L, Long::sum);
        }
        assertThat(new TreeSet<>(deadByKind.keySet())).as("kinds dead-lettered").isEqualTo(new TreeSet<>(hostile.keySet()));
        assertThat(deadByKind.values()).as("each exactly once").containsOnly(1L);
        assertThat(h.count("SELECT COUNT(*) FROM loads")).as("every stored load, and nothing else").isEqualTo(stored.size());
        assertThat(storedIds).hasSize(stored.size());
        assertThat(TopicReader.readCommitted(broker, h.decisions + ".dlq", 0)).as("nothing reached the store that it could not store").isEmpty();
    }
}
