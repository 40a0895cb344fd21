package dev.placementaudit.worker.pipeline;

import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.service.ConsumerService;
import dev.placementaudit.service.DaemonThreads;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.service.TopicSetup;
import dev.placementaudit.service.cli.KafkaReachability;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.WorkerVersion;
import dev.placementaudit.worker.reconcile.Reconciler;
import io.micrometer.core.instrument.binder.kafka.KafkaClientMetrics;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;

/** A running resolver-worker: topics ensured, clients built, the loop on its own thread, the ops endpoint up. */
public final class ResolverWorker extends ConsumerService {
    private static final Logger LOG = LoggerFactory.getLogger(ResolverWorker.class);

    private final WorkerConfig config;
    private final ResolverLoop loop;
    /** Null when {@code worker.reconcile.after} is 0. */
    private final Reconciler reconciler;
    private final List<AutoCloseable> resources;

    private ResolverWorker(WorkerConfig config, ResolverLoop loop, Reconciler reconciler, List<AutoCloseable> resources) {
        super("resolver-worker " + config.instanceId(), loop, LOG);
        this.config = config;
        this.loop = loop;
        this.reconciler = reconciler;
        this.resources = resources;
    }

    /**
     * The reconciler: reads the input and the worker's outputs on a consumer of its own (read_committed, no group), resolves
     * again what the group committed past with no output, and publishes it on a transactional producer of its own.
     */
    static Reconciler reconciler(WorkerConfig config, Admin admin, LoadResolution resolution, Supplier<Set<Integer>> owned,
                                 PrometheusMeterRegistry registry) {
        Map<String, Object> reading = new HashMap<>(config.kafka());
        reading.put(ConsumerConfig.CLIENT_ID_CONFIG, "resolver-" + config.instanceId() + "-reconciler");
        reading.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        reading.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        reading.remove(ConsumerConfig.GROUP_ID_CONFIG);
        reading.remove(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
        // The refetch of an overdue load answers at once; the summaries come in fetches of up to a megabyte or half a second,
        // not one fetch per transaction: the reconciler reads every summary the loop writes, on the same brokers and cores,
        // and is minutes behind by design.
        Map<String, Object> refetching = new HashMap<>(reading);
        refetching.put(ConsumerConfig.CLIENT_ID_CONFIG, "resolver-" + config.instanceId() + "-reconciler-refetch");
        reading.put(ConsumerConfig.FETCH_MIN_BYTES_CONFIG, 1 << 20);
        reading.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 500);
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(reading, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        KafkaConsumer<byte[], byte[]> refetch = new KafkaConsumer<>(refetching, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        Map<String, Object> publishing = producerConfig(config, config.reconcilerTransactionalId(), "-reconciler");
        Clock clock = Clock.systemUTC();
        RecordPreparation preparation = new RecordPreparation(config, resolution, clock);
        Function<ConsumerRecord<byte[], byte[]>, Reconciler.Redo> redo = record -> {
            Prepared again = preparation.prepare(record);
            if (again.reason() != null) {
                return new Reconciler.Redo(List.of(DeadLetter.of(config.deadLetterTopic(), record, again.reason(), again.detail(), again.field(),
                        again.error(), resolution.resolverVersion(), clock.instant())), null);
            }
            return new Reconciler.Redo(again.outputs(), again.summary().getLoadId().toString());
        };
        Reconciler.Settings settings = new Reconciler.Settings(config.inputTopic(), config.resolvedTopic(), config.deadLetterTopic(),
                List.of(config.decisionsTopic(), config.resolvedTopic(), config.deadLetterTopic()), config.groupId(), config.reconcileAfter(),
                config.reconcileLookback(), config.transactionTimeout().plus(Duration.ofSeconds(30)));
        return new Reconciler(settings, consumer, refetch, admin, () -> new KafkaProducer<>(publishing, new ByteArraySerializer(), new ByteArraySerializer()),
                redo, owned, registry, clock);
    }

    /** @throws dev.placementaudit.service.cli.CommandFailure when no broker answers within {@code connect.timeout} */
    public static ResolverWorker start(WorkerConfig config, PrometheusMeterRegistry registry) {
        KafkaReachability.check(config.kafka(), config.connectTimeout(), List.of());
        if (config.createTopics()) {
            TopicSetup.ensure(config.kafka(), config.topicPartitions(), config.topicReplication(),
                    List.of(config.decisionsTopic(), config.resolvedTopic(), config.deadLetterTopic()), List.of(config.inputTopic()));
        }
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig(config), new ByteArrayDeserializer(), new ByteArrayDeserializer());
        KafkaClientMetrics consumerMetrics = new KafkaClientMetrics(consumer);
        consumerMetrics.bindTo(registry);
        Admin admin = Admin.create(config.kafka());
        List<String> ids = config.commitOverlap() ? List.of(config.transactionalId(), config.secondTransactionalId())
                : List.of(config.transactionalId());
        if (!config.commitOverlap()) {
            retire(config, config.secondTransactionalId());
        }
        List<Supplier<Producer<byte[], byte[]>>> producers = new ArrayList<>();
        List<AutoCloseable> resources = new ArrayList<>(List.of(consumerMetrics, admin));
        for (int i = 0; i < ids.size(); i++) {
            Producers factory = new Producers(config, ids.get(i), i == 0 ? "" : "-2", registry);
            producers.add(factory);
            resources.add(factory);
        }
        WorkerMetrics metrics = new WorkerMetrics(registry);
        LoadResolution resolution = new LoadResolution(WorkerVersion.resolverVersion());
        ResolverLoop loop = new ResolverLoop(config, consumer, producers, metrics, resolution, Clock.systemUTC());
        Reconciler reconciler = config.reconciles() ? reconciler(config, admin, resolution, loop::owned, registry) : null;
        loop.start("resolver-loop-" + config.instanceId());
        if (reconciler != null) {
            Thread thread = DaemonThreads.start("reconciler-" + config.instanceId(), reconciler);
            // Stopped before the admin client it shares is closed.
            resources.add(0, () -> {
                reconciler.stop();
                thread.join(10_000);
            });
        }
        ResolverWorker worker = new ResolverWorker(config, loop, reconciler, resources);
        worker.serve(config.http(), registry, routes -> { });
        LOG.info("resolver-worker {} consuming {} as group {} (transactional id {}), resolver {}{}", config.instanceId(),
                config.inputTopic(), config.groupId(), String.join(" and ", ids), WorkerVersion.resolverVersion(),
                worker.port() < 0 ? "" : ", ops on :" + worker.port());
        return worker;
    }

    /**
     * With commits one at a time, the second transactional id of an earlier run that overlapped them is fenced once:
     * whatever it left open is aborted now, not when its transaction times out while read_committed readers wait.
     */
    private static void retire(WorkerConfig config, String transactionalId) {
        Map<String, Object> settings = producerConfig(config, transactionalId, "-retired");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(settings, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.initTransactions();
        } catch (KafkaException e) {
            LOG.warn("could not fence transactional id {} of an earlier run that overlapped commits ({}); anything it left open is "
                    + "aborted when its transaction times out", transactionalId, e.toString());
        }
    }

    /**
     * Makes one of the loop's transactional producers, first and after each outage, with its client metrics bound to
     * the registry in place of the last one's.
     */
    private static final class Producers implements Supplier<Producer<byte[], byte[]>>,
            AutoCloseable {
        private final Map<String, Object> settings;
        private final PrometheusMeterRegistry registry;
        private KafkaClientMetrics metrics;

        Producers(WorkerConfig config, String transactionalId, String clientSuffix, PrometheusMeterRegistry registry) {
            this.settings = producerConfig(config, transactionalId, clientSuffix);
            this.registry = registry;
        }

        @Override
        public synchronized KafkaProducer<byte[], byte[]> get() {
            KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(settings, new ByteArraySerializer(), new ByteArraySerializer());
            close();
            metrics = new KafkaClientMetrics(producer);
            metrics.bindTo(registry);
            return producer;
        }

        @Override
        public synchronized void close() {
            if (metrics != null) {
                metrics.close();
                metrics = null;
            }
        }
    }

    /** Consumer settings the worker's guarantees depend on override whatever the configuration says. */
    static Map<String, Object> consumerConfig(WorkerConfig config) {
        Map<String, Object> kafka = new HashMap<>(config.kafka());
        kafka.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        kafka.putIfAbsent(ConsumerConfig.CLIENT_ID_CONFIG, "resolver-" + config.instanceId() + "-consumer");
        enforce(kafka, ConsumerConfig.GROUP_ID_CONFIG, config.groupId());
        // Static membership: a restarted instance takes its partitions back at once instead of waiting for the
        // dead member's session to time out; a second process with the same id is fenced.
        kafka.putIfAbsent(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, config.instanceId());
        enforce(kafka, ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        enforce(kafka, ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        enforce(kafka, ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(config.maxPollRecords()));
        return kafka;
    }

    /** @param clientSuffix added to the client id, given or not, so the two producers' client metrics stay apart */
    static Map<String, Object> producerConfig(WorkerConfig config, String transactionalId, String clientSuffix) {
        Map<String, Object> kafka = new HashMap<>(config.kafka());
        kafka.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, "10");
        kafka.putIfAbsent(ProducerConfig.BATCH_SIZE_CONFIG, "131072");
        kafka.putIfAbsent(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        kafka.putIfAbsent(ProducerConfig.CLIENT_ID_CONFIG, "resolver-" + config.instanceId() + "-producer");
        kafka.put(ProducerConfig.CLIENT_ID_CONFIG, kafka.get(ProducerConfig.CLIENT_ID_CONFIG) + clientSuffix);
        enforce(kafka, ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        enforce(kafka, ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        enforce(kafka, ProducerConfig.ACKS_CONFIG, "all");
        enforce(kafka, ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, Long.toString(config.transactionTimeout().toMillis()));
        return kafka;
    }

    private static void enforce(Map<String, Object> kafka, String key, String value) {
        Object given = kafka.put(key, value);
        if (given != null && !String.valueOf(given).equals(value)) {
            LOG.warn("kafka.{}={} ignored: the worker's exactly-once guarantee needs {}", key, given, value);
        }
    }

    @Override
    protected Map<String, Object> identity() {
        return Map.of("instanceId", config.instanceId());
    }

    /** Besides the vitals: a producer being made anew after an outage, or a loop that has stopped polling. */
    @Override
    protected List<String> problems() {
        List<String> problems = new ArrayList<>();
        if (reconciler != null) {
            problems.addAll(reconciler.problems());
        }
        String recovering = loop.recovering();
        if (recovering != null) {
            problems.add("making the transactional producer anew after: " + recovering);
        }
        if (loop.sinceLastPoll().compareTo(Duration.ofSeconds(60)) >= 0) {
            problems.add("no poll for " + loop.sinceLastPoll().toSeconds() + " s: the loop is stuck");
        }
        return problems;
    }

    /**
     * The batch in hand has committed (or aborted) and the loop's clients are closed: the reconciler stops, then the
     * clients' metrics and the admin client go.
     */
    @Override
    protected void closeResources() {
        for (AutoCloseable resource : resources) {
            try {
                resource.close();
            } catch (Exception e) {
                LOG.debug("closing {} failed: {}", resource, e.toString());
            }
        }
    }
}
