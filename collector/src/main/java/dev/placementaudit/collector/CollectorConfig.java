package dev.placementaudit.collector;

import dev.placementaudit.service.ConfigException;
import dev.placementaudit.service.HttpSettings;
import dev.placementaudit.service.Settings;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Everything the collector reads, from {@code collector.*} keys (env {@code PA_COLLECTOR_*}); every {@code kafka.*} key
 * passes through to its producer. conf/collector.properties documents each key.
 *
 * @param fleets        who may write: {@code collector.fleets=phones,browsers}, then per fleet
 *                      {@code collector.fleet.phones.token.sha256} (the token's SHA-256, hex) and
 *                      {@code collector.fleet.phones.deployments} (ids, or prefixes ending in {@code *})
 * @param maxBodyBytes  the largest body taken as sent (gzip or not), and the largest once inflated: over either is a 413
 * @param maxItems      loads plus observations in one batch; more is a 413
 * @param sendTimeout   how long a batch waits for the broker's acknowledgement before the sender gets a 503
 * @param retryAfter    what a 503 tells the sender to wait, and how long the collector answers 503 at once after the broker
 *                      failed a batch (rather than making every sender wait {@code sendTimeout} to learn it)
 * @param maxInFlight   batches being read and published at once; one more is a 503 with {@code Retry-After: 1}. It bounds
 *                      the collector's heap: each holds its items' encoded events (about 2 MB for 100 loads of a 1B model)
 */
public record CollectorConfig(
        Map<String, Object> kafka,
        String loadsTopic,
        String observationsTopic,
        HttpSettings http,
        List<Fleet> fleets,
        long maxBodyBytes,
        int maxItems,
        int maxTensorsPerLoad,
        Duration sendTimeout,
        Duration retryAfter,
        int maxInFlight,
        boolean createTopics,
        int topicPartitions,
        short topicReplication,
        Duration connectTimeout) {
    private static final Pattern FLEET_NAME = Pattern.compile("[a-z0-9][a-z0-9-]{0,62}");
    private static final Pattern SHA256 = Pattern.compile("[0-9a-fA-F]{64}");

    public CollectorConfig {
        kafka = Map.copyOf(kafka);
        fleets = List.copyOf(fleets);
        if (!kafka.containsKey("bootstrap.servers")) {
            throw new ConfigException("kafka.bootstrap.servers", null, "is required (or set KAFKA_BOOTSTRAP_SERVERS)");
        }
    }

    public static CollectorConfig from(Settings settings) {
        HttpSettings http = HttpSettings.from(settings, "collector", 8083);
        // Bearer tokens in clear text must not cross a network: off loopback, TLS or a deliberate opt-out (a proxy terminating TLS).
        if (http.port() >= 0 && !http.loopbackOnly() && http.tls().isEmpty() && !http.insecure()) {
            throw new ConfigException("collector.http.host", http.host(), "is not a loopback address and no TLS is configured: devices' tokens "
                    + "would cross the network in clear text; set collector.http.tls.keystore, or collector.api.insecure=true behind a proxy "
                    + "that terminates TLS");
        }
        CollectorConfig config = new CollectorConfig(
                settings.kafkaClientConfig(),
                settings.string("collector.loads.topic", "model-loads"),
                settings.string("collector.observations.topic", "load-observations"),
                http,
                fleets(settings),
                settings.longValue("collector.max.body.bytes", 16L << 20, 1024),
                settings.integer("collector.max.items", 1_000, 1, 100_000),
                settings.integer("collector.max.tensors.per.load", 100_000, 1, 10_000_000),
                settings.duration("collector.send.timeout", Duration.ofSeconds(10)),
                settings.duration("collector.retry.after", Duration.ofSeconds(5)),
                settings.integer("collector.max.in.flight", 16, 1, 10_000),
                settings.bool("collector.topics.create", true),
                settings.integer("collector.topics.partitions", 3, 1, 10_000),
                (short) settings.integer("collector.topics.replication", 1, 1, 32),
                settings.connectTimeout());
        settings.unreadKeys("collector.").forEach(key -> LoggerFactory.getLogger(CollectorConfig.class)
                .warn("configuration {} is not a collector setting (misspelt?); ignored", key));
        return config;
    }

    private static List<Fleet> fleets(Settings settings) {
        List<String> names = settings.list("collector.fleets");
        if (names.isEmpty()) {
            throw new ConfigException("collector.fleets", null, "is required: name each fleet that may write (collector.fleets=phones,browsers), "
                    + "then its collector.fleet.NAME.token.sha256 and collector.fleet.NAME.deployments; `placement-audit collector token "
                    + "--fleet NAME` makes a token");
        }
        double defaultRate = settings.integer("collector.rate.per.second", 100, 1, 1_000_000);
        int defaultBurst = settings.integer("collector.rate.burst", 200, 1, 1_000_000);
        List<Fleet> fleets = new ArrayList<>();
        Set<String> digests = new HashSet<>();
        for (String name : names) {
            if (!FLEET_NAME.matcher(name).matches()) {
                throw new ConfigException("collector.fleets", name, "a fleet name is lower-case letters, digits and '-'");
            }
            String prefix = "collector.fleet." + name + ".";
            String digest = settings.requiredString(prefix + "token.sha256").trim();
            if (!SHA256.matcher(digest).matches()) {
                throw new ConfigException(prefix + "token.sha256", digest.length() > 8 ? digest.substring(0, 8) + "..." : digest,
                        "is not 64 hexadecimal characters (the SHA-256 of the token, not the token)");
            }
            if (!digests.add(digest.toLowerCase())) {
                throw new ConfigException(prefix + "token.sha256", digest.substring(0, 8) + "...", "is another fleet's token too: "
                        + "each fleet needs a token of its own, or a request could not say which fleet it is");
            }
            List<String> deployments = settings.list(prefix + "deployments");
            if (deployments.isEmpty()) {
                throw new ConfigException(prefix + "deployments", null, "is required: the deployment ids fleet " + name
                        + " may write, or prefixes ending in * (android-*)");
            }
            fleets.add(new Fleet(name, HexFormat.of().parseHex(digest.toLowerCase()), deployments,
                    settings.integer(prefix + "rate.per.second", (int) defaultRate, 1, 1_000_000),
                    settings.integer(prefix + "rate.burst", defaultBurst, 1, 1_000_000)));
        }
        return fleets;
    }

    public String bootstrapServers() {
        return String.valueOf(kafka.get("bootstrap.servers"));
    }
}
