package dev.placementaudit.testkit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What Kafka itself does with a transaction whose commit is under way, or whose successor has begun, when brokers are
 * killed with SIGKILL: plain Kafka clients only, none of this project's code (issue 54's split commit: a commit the
 * coordinator completed whose markers never reached five of its seven partitions, on one broker).
 *
 * <p>One transactional producer writes each transaction to six partitions of two topics and commits the offset of an
 * input partition with it ({@code sendOffsetsToTransaction}, as a consume-transform-produce loop does), back to back,
 * so a kill lands inside a commit or just after one, while the next transaction's first batches are in flight. On any
 * error it does what the standard loop does: abort, or close and make the producer anew ({@code initTransactions}
 * fences the old epoch and settles what it left). Meanwhile nodes are killed and brought back. Afterwards, read
 * read_committed, Kafka's promise is checked: every transaction whose {@code commitTransaction} returned is visible
 * on all six partitions, every other one on all or none, the group's offset is that of a visible transaction, and no
 * transaction is left hanging (the last stable offset at the end of every partition).
 *
 * <p>Run on one broker and on the three-node cluster (replication factor 3, {@code min.insync.replicas} 2), under
 * transaction versions 1 and 2. {@code -Dpa.repro.rounds} sets how many kills each case makes.
 */
class SplitCommitReproducerTest {
    private static final int ROUNDS = Integer.getInteger("pa.repro.rounds", 5);
    private static final List<String> TOPICS = List.of("decided", "resolved");
    private static final int PARTITIONS = 3;
    private static final String GROUP = "repro-group";

    static Stream<Arguments> cases() {
        return Stream.of(Arguments.of("three nodes", (short) 2), Arguments.of("three nodes", (short) 1), Arguments.of("one broker", (short) 2), Arguments.of("one broker", (short) 1));
    }

    @ParameterizedTest(name = "{0}, transaction.version {1}")
    @MethodSource("cases")
    void everyTransactionAcknowledgedAsCommittedIsVisibleEverywhereAfterKills(String cluster, short transactionVersion) throws Exception {
        Random random = new Random(Long.getLong("pa.repro.seed", 54L) + transactionVersion);
        try (BrokerChaos chaos = BrokerChaos.start(cluster)) {
            KafkaBroker broker = chaos.broker();
            setTransactionVersion(broker, transactionVersion);
            for (String topic : TOPICS) {
                broker.createTopics(PARTITIONS, topic);
            }
            broker.createTopics(1, "input");
            Committer committer = new Committer(broker);
            Thread thread = new Thread(committer, "repro-committer");
            thread.start();
            List<String> kills = new ArrayList<>();
            try {
                for (int round = 0; round < ROUNDS; round++) {
                    committer.awaitCommits(10, kills);
                    // A kill at a random moment of a stream of commits: inside one, or just after one while the next begins.
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(random.nextInt(300)));
                    kills.add(chaos.kill());
                    // How long the nodes stay away is the fault under test, not a wait for a condition.
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1_000 + random.nextInt(3_000)));
                    chaos.restart();
                }
                committer.awaitCommits(10, kills);
            } finally {
                committer.running.set(false);
                thread.join(120_000);
            }
            Outcome outcome = read(broker, committer.attempted.get());
            String report = String.format("%s, transaction.version %d: %d kills %s; %d transactions acknowledged as committed, %d ended in an "
                            + "error; lost (acknowledged, not visible on every partition): %s; split (visible on some partitions only): %s; "
                            + "partitions with a transaction left hanging: %s; producers made anew: %d", cluster, transactionVersion, kills.size(), kills,
                    committer.acknowledged.size(), committer.failed.size(), outcome.lost(committer.acknowledged), outcome.split(), outcome.hanging,
                    committer.remade.get());
            System.out.println(report);
            assertThat(outcome.hanging).as(report).isEmpty();
            assertThat(outcome.lost(committer.acknowledged)).as(report).isEmpty();
            assertThat(outcome.split()).as(report).isEmpty();
            assertThat(outcome.visible).as("the group's offset is that of a transaction visible everywhere: " + report)
                    .containsKey(outcome.groupOffset - 1);
        }
    }

    /** Transaction version 1 or 2 for the whole cluster (a new cluster finalizes the newest, 2). */
    private static void setTransactionVersion(KafkaBroker broker, short version) throws Exception {
        try (Admin admin = Admin.create(broker.clientConfig())) {
            short now = admin.describeFeatures().featureMetadata().get(30, TimeUnit.SECONDS).finalizedFeatures().get("transaction.version").maxVersionLevel();
            if (now != version) {
                admin.updateFeatures(Map.of("transaction.version", new FeatureUpdate(version, version < now
                        ? FeatureUpdate.UpgradeType.SAFE_DOWNGRADE : FeatureUpdate.UpgradeType.UPGRADE)), new UpdateFeaturesOptions())
                        .all().get(30, TimeUnit.SECONDS);
            }
            await().atMost(Duration.ofSeconds(30)).until(() -> admin.describeFeatures().featureMetadata().get(5, TimeUnit.SECONDS)
                    .finalizedFeatures().get("transaction.version").maxVersionLevel() == version);
        }
    }

    /** The standard transactional loop, with nothing of this project's: begin, send, offsets, commit; on error abort or make anew. */
    private static final class Committer implements Runnable {
        final KafkaBroker broker;
        final AtomicBoolean running = new AtomicBoolean(true);
        /** Transactions whose commitTransaction returned: Kafka promises each is visible everywhere. */
        final Set<Integer> acknowledged = ConcurrentHashMap.newKeySet();
        /** Transactions that ended in an error of any kind: each must be visible everywhere or nowhere. */
        final Set<Integer> failed = ConcurrentHashMap.newKeySet();
        final AtomicInteger attempted = new AtomicInteger();
        final AtomicInteger remade = new AtomicInteger();
        /** The last error the loop met, and what it did about it: for a stall's failure message. */
        final AtomicReference<String> lastError = new AtomicReference<>("none");

        Committer(KafkaBroker broker) {
            this.broker = broker;
        }

        /** Waits until {@code count} more transactions committed: the loop recovered from the last kill by itself. */
        void awaitCommits(int count, List<String> kills) {
            int before = acknowledged.size();
            await().atMost(Duration.ofSeconds(120)).untilAsserted(() -> assertThat(acknowledged.size()).as(() -> "after kills " + kills + ", "
                    + count + " more commits (attempted " + attempted.get() + ", failed " + failed.size() + ", made anew " + remade.get()
                    + "; last error " + lastError.get() + ")").isGreaterThanOrEqualTo(before + count));
        }

        @Override
        public void run() {
            KafkaProducer<String, String> producer = make();
            while (running.get()) {
                int n = attempted.getAndIncrement();
                try {
                    producer.beginTransaction();
                    for (String topic : TOPICS) {
                        for (int p = 0; p < PARTITIONS; p++) {
                            producer.send(new ProducerRecord<>(topic, p, "t" + n, Integer.toString(n)));
                        }
                    }
                    producer.sendOffsetsToTransaction(Map.of(new TopicPartition("input", 0), new OffsetAndMetadata(n + 1L)),
                            new ConsumerGroupMetadata(GROUP));
                    producer.commitTransaction();
                    acknowledged.add(n);
                } catch (RuntimeException e) {
                    failed.add(n);
                    lastError.set(n + ": " + e);
                    // An abortable error is aborted. A commit that timed out may still complete, so it is not aborted (the
                    // client refuses to); that, fenced and fatal errors make the producer anew, whose initTransactions
                    // fences the old epoch and completes or aborts what it left open.
                    try {
                        if (e instanceof ProducerFencedException || e instanceof TimeoutException || !(e instanceof KafkaException)) {
                            throw e;
                        }
                        producer.abortTransaction();
                    } catch (RuntimeException notAborted) {
                        lastError.set(n + ": " + e + (notAborted == e ? "" : ", then " + notAborted) + ": made anew");
                        producer.close(Duration.ZERO);
                        producer = make();
                        remade.incrementAndGet();
                    }
                }
            }
            producer.close(Duration.ofSeconds(10));
        }

        private KafkaProducer<String, String> make() {
            while (true) {
                Map<String, Object> config = broker.clientConfig();
                config.putAll(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "repro-tx", ProducerConfig.ACKS_CONFIG, "all",
                        ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 10_000, ProducerConfig.MAX_BLOCK_MS_CONFIG, 10_000,
                        ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000, ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 10_000,
                        ProducerConfig.LINGER_MS_CONFIG, 0));
                KafkaProducer<String, String> producer = new KafkaProducer<>(config, new StringSerializer(), new StringSerializer());
                try {
                    producer.initTransactions();
                    return producer;
                } catch (KafkaException e) {
                    lastError.set("initTransactions: " + e);
                    producer.close(Duration.ZERO);
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
                }
            }
        }
    }

    /** What a read_committed reader sees at the end, once every node is back. */
    private static Outcome read(KafkaBroker broker, int attempted) throws Exception {
        Map<String, Object> config = broker.clientConfig();
        config.putAll(Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed", ConsumerConfig.GROUP_ID_CONFIG, GROUP));
        Outcome outcome = new Outcome();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer());
             Admin admin = Admin.create(broker.clientConfig())) {
            List<TopicPartition> partitions = new ArrayList<>();
            TOPICS.forEach(topic -> {
                for (int p = 0; p < PARTITIONS; p++) {
                    partitions.add(new TopicPartition(topic, p));
                }
            });
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            // A transaction still open is settled by the coordinator within its timeout (10 s); one that outlives that is
            // hanging: the last stable offset (a read_committed end offset) stays short of the high watermark.
            Map<TopicPartition, Long> stable = new HashMap<>();
            Map<TopicPartition, Long> high = new HashMap<>();
            long settle = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
            do {
                LockSupport.parkNanos(TimeUnit.SECONDS.toNanos(1));
                stable.putAll(consumer.endOffsets(partitions));
                high.putAll(highWatermarks(broker, partitions));
            } while (!stable.equals(high) && System.nanoTime() < settle);
            for (TopicPartition tp : partitions) {
                if (stable.get(tp) < high.get(tp)) {
                    outcome.hanging.add(tp + " stable at " + stable.get(tp) + " of " + high.get(tp));
                }
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (partitions.stream().anyMatch(tp -> consumer.position(tp) < stable.get(tp)) && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    outcome.visible.computeIfAbsent(Integer.parseInt(record.value()), n -> new HashSet<>())
                            .add(new TopicPartition(record.topic(), record.partition()));
                }
            }
            OffsetAndMetadata group = admin.listConsumerGroupOffsets(GROUP).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS)
                    .get(new TopicPartition("input", 0));
            outcome.groupOffset = group == null ? 0 : (int) group.offset();
        }
        outcome.attempted = attempted;
        return outcome;
    }

    private static Map<TopicPartition, Long> highWatermarks(KafkaBroker broker, List<TopicPartition> partitions) {
        Map<String, Object> config = broker.clientConfig();
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        try (KafkaConsumer<String, String> uncommitted = new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer())) {
            return uncommitted.endOffsets(partitions);
        }
    }

    private static final class Outcome {
        final Map<Integer, Set<TopicPartition>> visible = new HashMap<>();
        final List<String> hanging = new ArrayList<>();
        int groupOffset;
        int attempted;

        Set<Integer> lost(Set<Integer> acknowledged) {
            Set<Integer> lost = new TreeSet<>();
            acknowledged.forEach(n -> {
                if (visible.getOrDefault(n, Set.of()).size() != TOPICS.size() * PARTITIONS) {
                    lost.add(n);
                }
            });
            return lost;
        }

        Map<Integer, Set<TopicPartition>> split() {
            Map<Integer, Set<TopicPartition>> split = new HashMap<>();
            visible.forEach((n, partitions) -> {
                if (partitions.size() != TOPICS.size() * PARTITIONS) {
                    split.put(n, partitions);
                }
            });
            return split;
        }
    }
}
