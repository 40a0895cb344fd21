package dev.placementaudit.store.chain;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The chain heads on Kafka: a compacted topic, keyed by deployment, holding each deployment's latest head. The store
 * publishes after each commit, from a thread of its own (a topic that is slow to answer never holds up ingestion);
 * {@code store verify} reads the topic back and compares.
 */
public final class ChainLog implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ChainLog.class);

    private final Producer<byte[], byte[]> producer;
    private final String topic;
    private final ExecutorService sender = Executors.newSingleThreadExecutor(r -> {
        Thread thread = new Thread(r, "audit-store-chain-heads");
        thread.setDaemon(true);
        return thread;
    });

    public ChainLog(Producer<byte[], byte[]> producer, String topic) {
        this.producer = producer;
        this.topic = topic;
    }

    public String topic() {
        return topic;
    }

    /** The key of a deployment's anchor (where its pruned chain now starts) on the chain topic; heads are keyed by the deployment. */
    public static byte[] anchorKey(String deploymentId) {
        return ("anchor/" + deploymentId).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** What the chain topic holds: every head still there, by deployment in entry order, and each deployment's latest anchor. */
    public record Published(Map<String, List<ChainHead>> heads, Map<String, ChainHead> anchors) {
    }

    /** Sends the heads in order, one per deployment; a failure is logged, and the next commit's heads supersede them. */
    public void publish(Collection<ChainHead> heads) {
        if (heads.isEmpty()) {
            return;
        }
        List<ChainHead> copy = List.copyOf(heads);
        sender.execute(() -> {
            for (ChainHead head : copy) {
                producer.send(new ProducerRecord<>(topic, head.key(), head.toJson()), (metadata, error) -> {
                    if (error != null) {
                        LOG.warn("cannot publish the chain head of {} (entry {}) to {}: {}", head.deploymentId(), head.seq(), topic, error.toString());
                    }
                });
            }
        });
    }

    /** Publishes each anchor and waits for the broker to acknowledge it: a prune is not done until its anchors are on the log. */
    public static void publishAnchors(Producer<byte[], byte[]> producer, String topic, List<ChainHead> anchors, Duration bound) throws Exception {
        for (ChainHead anchor : anchors) {
            producer.send(new ProducerRecord<>(topic, anchorKey(anchor.deploymentId()), anchor.toJson())).get(bound.toMillis(), TimeUnit.MILLISECONDS);
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
     * Every head still on the topic, by deployment in order of entry: the topic read from its start to its end as of
     * now. Compaction keeps at least the latest per deployment; until it runs, earlier ones are there too, and each is
     * checked.
     */
    public static Published read(Map<String, Object> kafka, String topic, Duration bound) {
        Map<String, Object> config = new HashMap<>(kafka);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        config.remove(ConsumerConfig.GROUP_ID_CONFIG);
        config.putIfAbsent(ConsumerConfig.CLIENT_ID_CONFIG, "audit-store-verify");
        config.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) Math.max(1_000, bound.toMillis()));
        Map<String, java.util.TreeMap<Long, ChainHead>> heads = new HashMap<>();
        Map<String, ChainHead> anchors = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<PartitionInfo> partitions = consumer.partitionsFor(topic, bound);
            if (partitions == null || partitions.isEmpty()) {
                throw new IllegalStateException("topic " + topic + " not found: no chain head was ever published there");
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
                    ChainHead head = ChainHead.fromJson(record.value());
                    if (record.key() != null && new String(record.key(), java.nio.charset.StandardCharsets.UTF_8).startsWith("anchor/")) {
                        anchors.merge(head.deploymentId(), head, (a, b) -> b.seq() >= a.seq() ? b : a);
                    } else {
                        heads.computeIfAbsent(head.deploymentId(), d -> new java.util.TreeMap<>()).put(head.seq(), head);
                    }
                }
            }
        }
        Map<String, List<ChainHead>> ordered = new HashMap<>();
        heads.forEach((deployment, bySeq) -> ordered.put(deployment, List.copyOf(bySeq.values())));
        return new Published(ordered, anchors);
    }
}
