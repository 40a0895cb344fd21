package dev.placementaudit.store;

import dev.placementaudit.service.ConsumerService;
import dev.placementaudit.service.ConsumerVitals;
import dev.placementaudit.service.DaemonThreads;
import dev.placementaudit.service.TopicSetup;
import dev.placementaudit.service.cli.KafkaReachability;
import dev.placementaudit.store.alerts.AlertOutbox;
import dev.placementaudit.store.alerts.AlertPublisher;
import dev.placementaudit.store.alerts.AlertsTopicPublishers;
import dev.placementaudit.store.api.ApiRoutes;
import dev.placementaudit.store.chain.ChainLog;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.db.PartitionUpkeep;
import dev.placementaudit.store.incidents.IncidentPublisher;
import dev.placementaudit.store.ingest.IngestLoop;
import dev.placementaudit.store.ingest.ProjectionWriter;
import dev.placementaudit.store.query.AuditQueries;
import dev.placementaudit.store.regression.RegressionDetector;
import dev.placementaudit.store.replay.WhatIf;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.management.ManagementFactory;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/** A running audit store: database migrated, ingest loop on its own thread, API and ops endpoint up. */
public final class AuditStore extends ConsumerService {
    private static final Logger LOG = LoggerFactory.getLogger(AuditStore.class);

    private final AuditDatabase database;
    private final IngestLoop loop;
    private final AlertPublisher publisher;
    private final KafkaProducer<byte[], byte[]> deadLetters;
    private final ChainLog chainLog;
    private final AuditQueries queries;
    private final PartitionUpkeep partitions;

    private AuditStore(AuditDatabase database, IngestLoop loop, AlertPublisher publisher,
                       KafkaProducer<byte[], byte[]> deadLetters, ChainLog chainLog, AuditQueries queries, PartitionUpkeep partitions) {
        super("audit-store", loop, LOG);
        this.database = database;
        this.loop = loop;
        this.publisher = publisher;
        this.deadLetters = deadLetters;
        this.chainLog = chainLog;
        this.queries = queries;
        this.partitions = partitions;
    }

    /** @throws dev.placementaudit.service.cli.CommandFailure when the broker or the database does not answer within {@code connect.timeout} */
    public static AuditStore start(StoreConfig config, PrometheusMeterRegistry registry) {
        return start(config, registry, Clock.systemUTC());
    }

    /**
     * A store whose ingest and publishing read the time from {@code clock}: when a load completed, when an incident changed,
     * whether an incident's update or resolution is due. Tests move it on to see a held resolution go out.
     */
    public static AuditStore start(StoreConfig config, PrometheusMeterRegistry registry, Clock clock) {
        long entered = uptimeMillis();
        KafkaReachability.check(config.kafka(), config.connectTimeout(), List.of());
        long brokerAnswered = uptimeMillis();
        warnIfEmbeddedStoreInProduction(config);
        // The database before the topics: a store that cannot start should not have changed the cluster first.
        AuditDatabase database = AuditDatabase.open(config.jdbcUrl(), config.jdbcUser(), config.jdbcPassword(), config.jdbcSchema(), config.poolSize(),
                config.connectTimeout());
        long databaseOpen = uptimeMillis();
        if (config.createTopics()) {
            try {
                // Alerts and dead letters are records to keep; the decision topics are the worker's, but a store started
                // first must not fail on them either.
                TopicSetup.ensure(config.kafka(), config.topicPartitions(), config.topicReplication(),
                        List.of(config.alertsTopic(), config.deadLetterTopic(), config.decisionsTopic(), config.resolvedTopic(),
                                config.observationsTopic()), List.of(),
                        List.of(config.chainTopic()));
            } catch (RuntimeException e) {
                database.close();
                throw e;
            }
        }
        // The parts, each made once: what reads, what meters, what judges a load, what writes it, what publishes, what ingests.
        AuditQueries queries = new AuditQueries(database.dataSource(), config.offHeapGrowth(), config.heapGrowth());
        StoreMetrics metrics = new StoreMetrics(registry, database.dataSource());
        ProjectionWriter writer = new ProjectionWriter(database, config.groupId(), config.decisionsTopic(), config.resolvedTopic(),
                config.observationsTopic(), config.unplannedOffHeap(),
                new RegressionDetector(database.dialect(), config.offHeapGrowth(), config.heapGrowth()),
                new AlertOutbox(database.dialect(), config.offHeapGrowth(), config.heapGrowth()), clock);
        KafkaProducer<byte[], byte[]> deadLetters = StoreClients.deadLetters(config);
        AlertPublisher publisher = new AlertPublisher(database.dataSource(), config.kafka(), config.alertsTopic(), config.groupId(),
                config.perLoadAlerts(), new IncidentPublisher(database.dataSource(), config.kafka(), config.alertsTopic(), config.groupId(),
                config.incidentUpdateInterval(), clock));
        ChainLog chainLog = new ChainLog(deadLetters, config.chainTopic(), config.groupId());
        // Health stays on the system clock: it measures how long the consumer has really been silent, which a clock moved
        // on by a test must not turn into an outage.
        IngestLoop loop = new IngestLoop(StoreClients.ingest(config), deadLetters, config, writer, publisher, chainLog, metrics, clock,
                new ConsumerVitals(config.healthBound(), Clock.systemUTC()));
        loop.start("audit-store-ingest");
        AuditStore store = new AuditStore(database, loop, publisher, deadLetters, chainLog, queries,
                PartitionUpkeep.start(database.dataSource(), clock));
        store.serve(config.http(), registry,
                routes -> ApiRoutes.install(routes, queries, new WhatIf(database.dataSource(), config.kafka(), config.loadsTopic()), config.http()));
        LOG.info("audit-store ingesting {}, {} and {} as group {} into {}{}", config.decisionsTopic(), config.resolvedTopic(),
                config.observationsTopic(), config.groupId(),
                AuditDatabase.redact(config.jdbcUrl()), store.port() < 0 ? "" : ", API and ops on :" + store.port());
        LOG.info("started {} ms after the JVM: store code reached at {} ms, broker answered at {} ms, database open at {} ms", uptimeMillis(),
                entered, brokerAnswered, databaseOpen);
        warnOfOtherProjections(config);
        return store;
    }

    /** When a started store looks at its chain topic for other projections. */
    private static final Duration OTHER_PROJECTIONS_CHECK_DELAY = Duration.ofSeconds(30);

    private static long uptimeMillis() {
        return ManagementFactory.getRuntimeMXBean().getUptime();
    }

    /**
     * Reads the chain topic and the alerts topic once, half a minute after the start (off the path of a restart, whose
     * first commit should not share the CPU with it), and warns when another projection (another store group) publishes
     * there too: each projection's {@code verify} reads only its own heads and each incident is keyed by its projection,
     * but one topic per projection keeps them apart for whoever reads the topic by hand.
     */
    private static void warnOfOtherProjections(StoreConfig config) {
        DaemonThreads.start("audit-store-chain-topic-check", () -> {
            try {
                Thread.sleep(OTHER_PROJECTIONS_CHECK_DELAY.toMillis());
                Set<String> others = ChainLog.read(config.kafka(), config.chainTopic(), config.groupId(), config.connectTimeout())
                        .otherProjections();
                if (!others.isEmpty()) {
                    LOG.warn("the chain topic {} also holds the heads of other projections {}: this store (projection {}) publishes and verifies "
                            + "only its own, but give each projection a store.chain.topic of its own", config.chainTopic(), others, config.groupId());
                }
                Set<String> alerting = AlertsTopicPublishers.others(config.kafka(), config.alertsTopic(), config.groupId(), config.connectTimeout());
                if (!alerting.isEmpty()) {
                    LOG.warn("the alerts topic {} also carries the incidents and alerts of other projections {}: this store's (projection {}) are "
                            + "keyed and marked with its projection, so a reader keeps them apart, but give each projection a store.alerts.topic "
                            + "of its own", config.alertsTopic(), alerting, config.groupId());
                }
            } catch (RuntimeException e) {
                LOG.debug("could not read the chain or alerts topic to look for other projections: {}", e.toString());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
    }

    @Override
    protected List<String> warnings() {
        return loop.warnings();
    }

    public AuditQueries queries() {
        return queries;
    }

    public AuditDatabase database() {
        return database;
    }

    /** The loop has stopped and the endpoint is down: the alert publisher, the chain's heads, the DLQ producer, the pool. */
    @Override
    protected void closeResources() {
        partitions.close();
        publisher.close();
        chainLog.flush(Duration.ofSeconds(10));
        chainLog.close();
        deadLetters.close(Duration.ofSeconds(10));
        database.close();
    }

    /**
     * An H2 file is the demo's store. Consuming a real cluster into one is almost always a forgotten
     * {@code PA_STORE_JDBC_URL}: the audit would live on one host's disk, unseen by every other instance.
     */
    static void warnIfEmbeddedStoreInProduction(StoreConfig config) {
        String servers = String.valueOf(config.kafka().get("bootstrap.servers"));
        if (config.jdbcUrl().startsWith("jdbc:h2:") && !onlyLoopback(servers)) {
            LOG.warn("*** audit-store is writing to an EMBEDDED H2 file ({}) while consuming Kafka at {}. For production set "
                    + "PA_STORE_JDBC_URL=jdbc:postgresql://HOST/DB (or store.jdbc.url). ***", AuditDatabase.redact(config.jdbcUrl()), servers);
        }
    }

    static boolean onlyLoopback(String bootstrapServers) {
        for (String server : bootstrapServers.split(",")) {
            String host = server.trim().replaceFirst(":\\d+$", "").replace("[", "").replace("]", "").toLowerCase(Locale.ROOT);
            if (!(host.equals("localhost") || host.startsWith("127.") || host.equals("::1"))) {
                return false;
            }
        }
        return true;
    }
}
