package dev.placementaudit.store.chain;

import dev.placementaudit.service.DaemonThreads;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The chain heads on Kafka: a compacted topic holding each deployment's latest head, per projection. The store
 * publishes after each commit, from a thread of its own (a topic that is slow to answer never holds up ingestion);
 * {@code store verify} reads the topic back and compares.
 *
 * <p>Several projections may share the topic (a second store on another database, a staging copy): each head names
 * its projection, the group its store ingests as, and is keyed by projection and deployment, so that none supersedes
 * another's under compaction and {@code verify} reads only its own. Heads published before projections were named (no
 * {@code projection}, keyed by the deployment alone) count as the reader's own until it has published a head of its own
 * for that deployment, which covers them.
 */
public final class ChainLog implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ChainLog.class);

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Producer<byte[], byte[]> producer;
    private final String topic;
    private final String projection;
    private final ExecutorService sender = Executors.newSingleThreadExecutor(DaemonThreads.named("audit-store-chain-heads"));

    public ChainLog(Producer<byte[], byte[]> producer, String topic, String projection) {
        this.producer = producer;
        this.topic = topic;
        this.projection = projection;
    }

    public String topic() {
        return topic;
    }

    /** The key of a projection's head of a deployment on the chain topic. */
    static byte[] headKey(String projection, String deploymentId) {
        return ("head/" + projection + "/" + deploymentId).getBytes(StandardCharsets.UTF_8);
    }

    /** The key of a projection's anchor of a deployment (where its pruned chain now starts) on the chain topic. */
    static byte[] anchorKey(String projection, String deploymentId) {
        return ("anchor/" + projection + "/" + deploymentId).getBytes(StandardCharsets.UTF_8);
    }

    /** A head or anchor as published: its fields and the projection it belongs to. */
    static byte[] toJson(String projection, ChainHead head) {
        ObjectNode json = JSON.createObjectNode();
        json.put("projection", projection);
        json.put("deploymentId", head.deploymentId());
        json.put("seq", head.seq());
        json.put("loadId", head.loadId());
        json.put("entryHash", head.entryHash());
        return json.toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * What the chain topic holds for one projection: every head still there, by deployment in entry order, each
     * deployment's latest anchor, and the other projections whose heads are on the topic too (none of which is read).
     */
    public record Published(Map<String, List<ChainHead>> heads, Map<String, ChainHead> anchors, Set<String> otherProjections) {
    }

    /** Sends the heads in order, one per deployment; a failure is logged, and the next commit's heads supersede them. */
    public void publish(Collection<ChainHead> heads) {
        if (heads.isEmpty()) {
            return;
        }
        List<ChainHead> copy = List.copyOf(heads);
        sender.execute(() -> {
            for (ChainHead head : copy) {
                producer.send(new ProducerRecord<>(topic, headKey(projection, head.deploymentId()), toJson(projection, head)), (metadata, error) -> {
                    if (error != null) {
                        LOG.warn("cannot publish the chain head of {} (entry {}) to {}: {}", head.deploymentId(), head.seq(), topic, error.toString());
                    }
                });
            }
        });
    }

    /** Publishes each anchor and waits for the broker to acknowledge it: a prune is not done until its anchors are on the log. */
    public static void publishAnchors(Producer<byte[], byte[]> producer, String topic, String projection, List<ChainHead> anchors, Duration bound)
            throws Exception {
        for (ChainHead anchor : anchors) {
            producer.send(new ProducerRecord<>(topic, anchorKey(projection, anchor.deploymentId()), toJson(projection, anchor)))
                    .get(bound.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /** Waits (within the bound) for what was handed to {@link #publish} to be sent and acknowledged. */
    public void flush(Duration bound) {
        try {
            sender.submit(producer::flush).get(bound.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            LOG.warn("chain heads not flushed within {}: {}", bound, e.toString());
        }
    }

    @Override
    public void close() {
        sender.shutdown();
        try {
            sender.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Every head of this projection still on the topic, by deployment in order of entry: the topic read from its start to
     * its end as of now. Compaction keeps at least the latest per projection and deployment; until it runs, earlier ones
     * are there too, and each is checked.
     */
    public static Published read(Map<String, Object> kafka, String topic, String projection, Duration bound) {
        Map<String, Object> config = new HashMap<>(kafka);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        config.remove(ConsumerConfig.GROUP_ID_CONFIG);
        config.putIfAbsent(ConsumerConfig.CLIENT_ID_CONFIG, "audit-store-verify");
        // A reader: asking for a topic that is not there must not make it on a broker that creates topics on demand.
        config.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        config.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) Math.max(1_000, bound.toMillis()));
        Heads own = new Heads();
        Heads unnamed = new Heads();
        Set<String> others = new TreeSet<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<PartitionInfo> partitions = consumer.partitionsFor(topic, bound);
            if (partitions == null || partitions.isEmpty()) {
                throw new UnknownTopicOrPartitionException("topic " + topic + " not found: no chain head was ever published there");
            }
            List<TopicPartition> assigned = partitions.stream().map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(assigned);
            consumer.seekToBeginning(assigned);
            Map<TopicPartition, Long> end = consumer.endOffsets(assigned, bound);
            long deadline = System.nanoTime() + Math.max(bound.toNanos(), Duration.ofSeconds(30).toNanos());
            while (assigned.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("reading the chain heads from " + topic + " did not finish in time");
                }
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    if (record.value() == null) {
                        continue;
                    }
                    Read read = parse(record.value());
                    boolean anchor = record.key() != null && new String(record.key(), StandardCharsets.UTF_8).startsWith("anchor/");
                    if (read.projection() == null) {
                        unnamed.add(read.head(), anchor);
                    } else if (read.projection().equals(projection)) {
                        own.add(read.head(), anchor);
                    } else {
                        others.add(read.projection());
                    }
                }
            }
        }
        // Heads from before projections were named stand for a deployment until this projection's own heads cover it.
        unnamed.heads.forEach(own.heads::putIfAbsent);
        unnamed.anchors.forEach(own.anchors::putIfAbsent);
        Map<String, List<ChainHead>> ordered = new HashMap<>();
        own.heads.forEach((deployment, bySeq) -> ordered.put(deployment, List.copyOf(bySeq.values())));
        return new Published(ordered, own.anchors, others);
    }

    /** A head or anchor as published, read once: the head, and the projection it names (null before projections were named). */
    private record Read(String projection, ChainHead head) {
    }

    private static Read parse(byte[] value) {
        try {
            JsonNode json = JSON.readTree(value);
            JsonNode projection = json.get("projection");
            return new Read(projection == null || projection.isNull() ? null : projection.asText(), JSON.treeToValue(json, ChainHead.class));
        } catch (IOException e) {
            throw new UncheckedIOException("not a chain head: " + new String(value, StandardCharsets.UTF_8), e);
        }
    }

    /** Heads by deployment in entry order, and each deployment's latest anchor. */
    private static final class Heads {
        final Map<String, TreeMap<Long, ChainHead>> heads = new HashMap<>();
        final Map<String, ChainHead> anchors = new HashMap<>();

        void add(ChainHead head, boolean anchor) {
            if (anchor) {
                anchors.merge(head.deploymentId(), head, (a, b) -> b.seq() >= a.seq() ? b : a);
            } else {
                heads.computeIfAbsent(head.deploymentId(), d -> new TreeMap<>()).put(head.seq(), head);
            }
        }
    }
}
