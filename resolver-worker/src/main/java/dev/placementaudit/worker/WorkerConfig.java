package dev.placementaudit.worker;

import dev.placementaudit.service.ConfigException;
import dev.placementaudit.service.HttpSettings;
import dev.placementaudit.service.Settings;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Map;

/**
 * Everything the resolver-worker reads, from {@code worker.*} keys (env {@code PA_WORKER_*}); every
 * {@code kafka.*} key passes through to both Kafka clients.
 *
 * @param instanceId        stable per worker instance: it names the transactional id, so a restarted instance
 *                          fences its dead predecessor and aborts the transaction it left open, instead of leaving
 *                          read_committed consumers waiting for the transaction timeout
 * @param maxTensorsPerLoad loads with more tensors are dead-lettered as TOO_MANY_TENSORS rather than risk the heap
 * @param http              ops endpoint (/health, /metrics): worker.http.host (127.0.0.1) and worker.http.port (0 picks a
 *                          free port, -1 disables it), TLS by worker.http.tls.keystore
 * @param resolveThreads    threads that decode, resolve and encode a batch's records in parallel (sending stays
 *                          on the loop thread, in input order)
 * @param healthBound       how long the broker may be unreachable, no partition assigned, or lag left uncommitted before
 *                          {@code /health} says DOWN ({@code worker.health.bound})
 * @param connectTimeout    how long start-up waits for a broker that does not answer ({@code connect.timeout})
 * @param batchesAhead      polls, up to this many, made while a transaction commits, whose records are prepared
 *                          meanwhile: throughput for memory, since each batch ahead holds up to maxPollRecords loads'
 *                          outputs; 0 polls only between transactions. 1 by default: 2 measured no faster unless the
 *                          broker is several milliseconds away (README, Benchmarks)
 * @param commitOverlap     two transactional producers used in turn ({@code worker.commit.overlap}, true): a batch's
 *                          offsets and end of transaction go to the broker while the next batch's outputs are sent on
 *                          the other producer, whose transactional id is this one's with {@code #2} added
 * @param reconcileAfter    how long the group may have committed past a load with neither its summary nor its dead
 *                          letter visible before the reconciler resolves it again ({@code worker.reconcile.after}, 2 min;
 *                          0s turns the reconciler off)
 * @param reconcileLookback how far back the reconciler reads at start ({@code worker.reconcile.lookback}, 24 h)
 * @param conflictWindow    how many of the loads it resolved lately the worker remembers, to dead-letter one that comes again
 *                          under the same load id with other content ({@code worker.conflicts.window}, 20,000; 0 remembers
 *                          none: the store still catches every conflict against what it holds)
 */
public record WorkerConfig(
        Map<String, Object> kafka,
        String inputTopic,
        String decisionsTopic,
        String resolvedTopic,
        String deadLetterTopic,
        String groupId,
        String instanceId,
        String transactionalIdPrefix,
        Duration pollTimeout,
        int maxPollRecords,
        Duration transactionTimeout,
        int maxTensorsPerLoad,
        boolean createTopics,
        int topicPartitions,
        short topicReplication,
        HttpSettings http,
        int resolveThreads,
        int batchesAhead,
        boolean commitOverlap,
        Duration connectTimeout,
        Duration healthBound,
        Duration reconcileAfter,
        Duration reconcileLookback,
        int conflictWindow) {

    public WorkerConfig {
        kafka = Map.copyOf(kafka);
        if (!kafka.containsKey("bootstrap.servers")) {
            throw new ConfigException("kafka.bootstrap.servers", null, "is required (or set KAFKA_BOOTSTRAP_SERVERS)");
        }
    }

    public static WorkerConfig from(Settings settings) {
        String input = settings.string("worker.input.topic", "model-loads");
        WorkerConfig config = new WorkerConfig(
                settings.kafkaClientConfig(),
                input,
                settings.string("worker.decisions.topic", "allocation-decided"),
                settings.string("worker.resolved.topic", "load-resolved"),
                settings.string("worker.dlq.topic", input + ".dlq"),
                settings.string("worker.group.id", "placement-resolver"),
                settings.string("worker.instance.id", Settings.hostname("worker")),
                settings.string("worker.transactional.id.prefix", "placement-resolver"),
                settings.duration("worker.poll.timeout", Duration.ofMillis(500)),
                settings.integer("worker.max.poll.records", 100, 1, 10_000),
                settings.duration("worker.transaction.timeout", Duration.ofSeconds(30)),
                settings.integer("worker.max.tensors.per.load", 100_000, 1, 10_000_000),
                settings.bool("worker.topics.create", true),
                settings.integer("worker.topics.partitions", 3, 1, 10_000),
                (short) settings.integer("worker.topics.replication", 1, 1, 32),
                HttpSettings.from(settings, "worker", 8081),
                settings.integer("worker.resolve.threads", Runtime.getRuntime().availableProcessors(), 1, 256),
                settings.integer("worker.batches.ahead", 1, 0, 16),
                settings.bool("worker.commit.overlap", true),
                settings.connectTimeout(),
                settings.duration("worker.health.bound", Duration.ofSeconds(60)),
                settings.duration("worker.reconcile.after", Duration.ofMinutes(2)),
                settings.duration("worker.reconcile.lookback", Duration.ofHours(24)),
                settings.integer("worker.conflicts.window", 20_000, 0, 10_000_000));
        settings.unreadKeys("worker.").forEach(key -> LoggerFactory.getLogger(WorkerConfig.class)
                .warn("configuration {} is not a resolver-worker setting (misspelt?); ignored", key));
        return config;
    }

    public String transactionalId() {
        return transactionalIdPrefix + "-" + instanceId;
    }

    /**
     * The second producer's transactional id, used when commits overlap: an instance id never ends in {@code #2} by
     * default (a host name has no {@code #}), and a prefix ACL on the first id covers it.
     */
    public String secondTransactionalId() {
        return transactionalId() + "#2";
    }

    /** The reconciler's own transactional id: it publishes the loads it resolves again beside the loop, never with it. */
    public String reconcilerTransactionalId() {
        return transactionalId() + "#reconciler";
    }

    public boolean reconciles() {
        return !reconcileAfter.isZero();
    }

    public String bootstrapServers() {
        return String.valueOf(kafka.get("bootstrap.servers"));
    }
}
