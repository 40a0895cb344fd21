package dev.placementaudit.store.config;

import dev.placementaudit.service.HttpSettings;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.regression.GrowthRule;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Map;

/**
 * Everything the audit store reads, from {@code store.*} keys (env {@code PA_STORE_*}); {@code kafka.*} keys pass
 * through to the Kafka clients.
 *
 * @param jdbcUrl  {@code jdbc:postgresql://...} in production; the default is an H2 file next to the process
 * @param instanceId     stable per store instance (default: the host's name): the consumer's static group membership, so a
 *                       restarted instance takes its partitions back at once instead of waiting out the dead one's session
 * @param connectTimeout how long a command waits for a broker or database that does not answer ({@code connect.timeout})
 * @param healthBound    how long the broker may be unreachable, no partition assigned, or lag left uncommitted before
 *                       {@code /health} says DOWN ({@code store.health.bound})
 * @param perLoadAlerts  whether {@code placement-alerts} also carries a {@code PlacementAlert} per load and kind, as before
 *                       incidents ({@code store.alerts.per.load}, default false: one {@code PlacementIncident} per cause)
 * @param incidentUpdateInterval the least time between two updates of one incident on {@code placement-alerts}
 *                       ({@code store.incidents.update.interval}, default 1m), and how long a resolution must hold before it goes out; opening and reopening go out at once
 * @param http           where the API, dashboard and ops endpoints listen ({@code store.http.*}, {@code store.api.*}):
 *                       loopback unless configured, and never another address without a token unless declared insecure
 */
public record StoreConfig(
        Map<String, Object> kafka,
        String decisionsTopic,
        String resolvedTopic,
        String alertsTopic,
        String deadLetterTopic,
        String loadsTopic,
        String chainTopic,
        String groupId,
        String instanceId,
        String jdbcUrl,
        String jdbcUser,
        String jdbcPassword,
        String jdbcSchema,
        int poolSize,
        Duration pollTimeout,
        int maxPollRecords,
        GrowthRule offHeapGrowth,
        GrowthRule heapGrowth,
        HttpSettings http,
        boolean createTopics,
        int topicPartitions,
        short topicReplication,
        Duration connectTimeout,
        Duration healthBound,
        boolean perLoadAlerts,
        Duration incidentUpdateInterval,
        String observationsTopic,
        GrowthRule unplannedOffHeap) {

    /** Where the store keeps its data when no URL is given: an H2 file below the working directory. */
    public static final String DEFAULT_H2_PATH = "./data/audit";
    public static final String DEFAULT_JDBC_URL = h2Url(DEFAULT_H2_PATH);

    /**
     * The H2 URL for a database file ({@code path} without {@code .mv.db}). AUTO_SERVER lets the CLI query the file while
     * {@code store run} has it open.
     */
    public static String h2Url(String path) {
        return "jdbc:h2:file:" + path + ";MODE=PostgreSQL;DATABASE_TO_LOWER=TRUE;DEFAULT_NULL_ORDERING=HIGH;AUTO_SERVER=TRUE";
    }

    public StoreConfig {
        kafka = Map.copyOf(kafka);
    }

    public static StoreConfig from(Settings settings) {
        String decisions = settings.string("store.decisions.topic", "allocation-decided");
        StoreConfig config = new StoreConfig(
                settings.kafkaClientConfig(),
                decisions,
                settings.string("store.resolved.topic", "load-resolved"),
                settings.string("store.alerts.topic", "placement-alerts"),
                settings.string("store.dlq.topic", decisions + ".dlq"),
                settings.string("store.loads.topic", "model-loads"),
                settings.string("store.chain.topic", "placement-audit-chain"),
                settings.string("store.group.id", "placement-audit-store"),
                settings.string("store.instance.id", Settings.hostname("audit-store")),
                settings.string("store.jdbc.url", DEFAULT_JDBC_URL),
                settings.string("store.jdbc.user", settings.string("store.jdbc.url", DEFAULT_JDBC_URL).startsWith("jdbc:h2:") ? "sa" : "postgres"),
                settings.string("store.jdbc.password", ""),
                settings.string("store.jdbc.schema", null),
                settings.integer("store.jdbc.pool.size", 4, 1, 64),
                settings.duration("store.poll.timeout", Duration.ofMillis(500)),
                settings.integer("store.max.poll.records", 10_000, 1, 100_000),
                new GrowthRule("off-heap", settings.integer("store.rules.offheap.percent", 10, 0, 100_000),
                        settings.longValue("store.rules.offheap.bytes", 16L << 20, 0)),
                new GrowthRule("heap", settings.integer("store.rules.heap.percent", 10, 0, 100_000),
                        settings.longValue("store.rules.heap.bytes", 16L << 20, 0)),
                HttpSettings.from(settings, "store", 8082).requireTokenOffLoopback("store"),
                settings.bool("store.topics.create", true),
                settings.integer("store.topics.partitions", 3, 1, 10_000),
                (short) settings.integer("store.topics.replication", 1, 1, 32),
                settings.connectTimeout(),
                settings.duration("store.health.bound", Duration.ofSeconds(60)),
                settings.bool("store.alerts.per.load", false),
                settings.duration("store.incidents.update.interval", Duration.ofMinutes(1)),
                settings.string("store.observations.topic", "load-observations"),
                new GrowthRule("unplanned off-heap", settings.integer("store.rules.unplanned.offheap.percent", 10, 0, 100_000),
                        settings.longValue("store.rules.unplanned.offheap.bytes", 64L << 20, 0)));
        settings.unreadKeys("store.").forEach(key -> LoggerFactory.getLogger(StoreConfig.class)
                .warn("configuration {} is not an audit-store setting (misspelt?); ignored", key));
        return config;
    }

    /** Secrets (the database password, the API token) never appear. */
    @Override
    public String toString() {
        return "StoreConfig[" + groupId + "/" + instanceId + " " + decisionsTopic + "+" + resolvedTopic + " -> " + AuditDatabase.redact(jdbcUrl)
                + " as " + jdbcUser + (jdbcPassword.isEmpty() ? "" : " (password set)") + ", " + http + "]";
    }

    public boolean hasKafka() {
        return kafka.containsKey("bootstrap.servers");
    }
}
