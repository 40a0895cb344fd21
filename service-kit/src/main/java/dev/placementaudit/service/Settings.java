package dev.placementaudit.service;

import dev.placementaudit.service.cli.CommandFailure;

import java.io.IOException;
import java.io.Reader;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A service's configuration, layered like Debezium Server's: defaults, then a properties file, then
 * environment variables, then system properties, then command-line overrides; later wins.
 *
 * <p>Environment variables use one prefix: {@code PA_WORKER_INPUT_TOPIC} is {@code worker.input.topic},
 * {@code PA_KAFKA_SASL_JAAS_CONFIG} is {@code kafka.sasl.jaas.config}. The usual {@code KAFKA_BOOTSTRAP_SERVERS}
 * is honoured too. Every {@code kafka.*} key passes through to the Kafka clients unchanged (prefix stripped), so
 * SASL and TLS are configuration, never code.
 */
public final class Settings {
    public static final String ENV_PREFIX = "PA_";
    public static final String KAFKA_PREFIX = "kafka.";
    /** How long any command waits for a broker or a database that does not answer before it gives up (env PA_CONNECT_TIMEOUT). */
    public static final String CONNECT_TIMEOUT = "connect.timeout";
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(10);

    private final Map<String, String> values;
    private final Map<String, String> sources;
    /** Every key a service asked for, so that a setting nobody reads (a typo) can be reported. */
    private final Set<String> read = ConcurrentHashMap.newKeySet();

    private Settings(Map<String, String> values, Map<String, String> sources) {
        this.values = values;
        this.sources = sources;
    }

    /** Keys under {@code prefix} that were given but never read: almost always a misspelling. */
    public List<String> unreadKeys(String prefix) {
        return values.keySet().stream().filter(k -> k.startsWith(prefix) && !read.contains(k)).sorted().toList();
    }

    private String get(String key) {
        read.add(key);
        return values.get(key);
    }

    public static Settings of(Map<String, String> values) {
        Builder builder = new Builder();
        builder.layer(values, "given");
        return builder.build();
    }

    /** The usual layering for a service started from its command line. */
    public static Settings load(Path file, Map<String, String> overrides) {
        Builder builder = new Builder();
        if (file != null) {
            builder.layer(readProperties(file), file.toString());
        }
        builder.layer(fromEnvironment(System.getenv()), "environment");
        Map<String, String> system = new HashMap<>();
        System.getProperties().forEach((k, v) -> {
            String key = k.toString();
            if (key.startsWith(KAFKA_PREFIX) || key.startsWith("worker.") || key.startsWith("store.") || key.startsWith("producer.")
                    || key.startsWith("collector.") || key.equals(CONNECT_TIMEOUT)) {
                system.put(key, v.toString());
            }
        });
        builder.layer(system, "system properties");
        builder.layer(overrides, "command line");
        return builder.build();
    }

    /** The environment variables this service understands, as settings keys. */
    public static Map<String, String> fromEnvironment(Map<String, String> env) {
        Map<String, String> mapped = new HashMap<>();
        String bootstrap = env.get("KAFKA_BOOTSTRAP_SERVERS");
        if (bootstrap != null && !bootstrap.isBlank()) {
            mapped.put("kafka.bootstrap.servers", bootstrap.trim());
        }
        env.forEach((name, value) -> {
            if (name.startsWith(ENV_PREFIX) && name.length() > ENV_PREFIX.length()) {
                mapped.put(name.substring(ENV_PREFIX.length()).toLowerCase(Locale.ROOT).replace('_', '.'), value);
            }
        });
        return mapped;
    }

    /** A properties file as settings, values trimmed; a missing or unreadable file is a one-line {@link CommandFailure}. */
    public static Map<String, String> readProperties(Path file) {
        if (Files.isDirectory(file)) {
            throw new CommandFailure("configuration file " + file + " is a directory; pass a .properties file");
        }
        if (!Files.isRegularFile(file)) {
            throw new CommandFailure("configuration file " + file + " not found (working directory " + Path.of("").toAbsolutePath() + ")");
        }
        Properties properties = new Properties();
        try (Reader reader = Files.newBufferedReader(file)) {
            properties.load(reader);
        } catch (IOException e) {
            throw new CommandFailure("cannot read configuration file " + file + ": " + e.getMessage(), e);
        }
        Map<String, String> map = new HashMap<>();
        properties.forEach((k, v) -> map.put(k.toString(), v.toString().trim()));
        return map;
    }

    public String string(String key, String fallback) {
        String value = get(key);
        return value == null || value.isBlank() ? fallback : value;
    }

    public String requiredString(String key) {
        String value = get(key);
        if (value == null || value.isBlank()) {
            throw new ConfigException(key, null, "is required");
        }
        return value;
    }

    public int integer(String key, int fallback, int min, int max) {
        String text = get(key);
        if (text == null || text.isBlank()) {
            return fallback;
        }
        try {
            int value = Integer.parseInt(text.trim());
            if (value < min || value > max) {
                throw fail(key, text, "must be between " + min + " and " + max);
            }
            return value;
        } catch (NumberFormatException e) {
            throw fail(key, text, "is not a whole number");
        }
    }

    public long longValue(String key, long fallback, long min) {
        String text = get(key);
        if (text == null || text.isBlank()) {
            return fallback;
        }
        try {
            long value = Long.parseLong(text.trim());
            if (value < min) {
                throw fail(key, text, "must be at least " + min);
            }
            return value;
        } catch (NumberFormatException e) {
            throw fail(key, text, "is not a whole number");
        }
    }

    public boolean bool(String key, boolean fallback) {
        String text = get(key);
        if (text == null || text.isBlank()) {
            return fallback;
        }
        return switch (text.trim().toLowerCase(Locale.ROOT)) {
            case "true", "yes", "1" -> true;
            case "false", "no", "0" -> false;
            default -> throw fail(key, text, "must be true or false");
        };
    }

    /** ISO-8601 ({@code PT5S}) or a number with a unit: {@code 500ms}, {@code 5s}, {@code 2m}. */
    public Duration duration(String key, Duration fallback) {
        String text = get(key);
        if (text == null || text.isBlank()) {
            return fallback;
        }
        String t = text.trim().toLowerCase(Locale.ROOT);
        try {
            if (t.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2)));
            }
            if (t.endsWith("s")) {
                return Duration.ofSeconds(Long.parseLong(t.substring(0, t.length() - 1)));
            }
            if (t.endsWith("m")) {
                return Duration.ofMinutes(Long.parseLong(t.substring(0, t.length() - 1)));
            }
            if (t.endsWith("h")) {
                return Duration.ofHours(Long.parseLong(t.substring(0, t.length() - 1)));
            }
            if (t.endsWith("d")) {
                return Duration.ofDays(Long.parseLong(t.substring(0, t.length() - 1)));
            }
            return Duration.parse(text.trim());
        } catch (NumberFormatException | DateTimeParseException e) {
            throw fail(key, text, "is not a duration such as 500ms, 5s, 2m, 36h, 90d or PT5S");
        }
    }

    /** The bound on waiting for an unreachable broker or database ({@value #CONNECT_TIMEOUT}, default 10 s). */
    public Duration connectTimeout() {
        return duration(CONNECT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT);
    }

    /**
     * This machine's name ({@code $HOSTNAME}, else the resolver's), the default instance id of a service: stable across
     * restarts of one pod or host, which is what static group membership and transactional ids need.
     */
    public static String hostname(String fallback) {
        String env = System.getenv("HOSTNAME");
        if (env != null && !env.isBlank()) {
            return env;
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            return fallback;
        }
    }

    /** Comma-separated; empty when absent. */
    public List<String> list(String key) {
        String text = get(key);
        if (text == null || text.isBlank()) {
            return List.of();
        }
        return Arrays.stream(text.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
    }

    public boolean has(String key) {
        String value = get(key);
        return value != null && !value.isBlank();
    }

    /** Every {@code kafka.*} key with the prefix removed, for the Kafka client constructors. */
    public Map<String, Object> kafkaClientConfig() {
        Map<String, Object> config = new LinkedHashMap<>();
        values.forEach((key, value) -> {
            if (key.startsWith(KAFKA_PREFIX)) {
                config.put(key.substring(KAFKA_PREFIX.length()), value);
            }
        });
        return config;
    }

    /** The effective settings with secrets masked, for a start-up log line. */
    public Map<String, String> describe() {
        Map<String, String> shown = new TreeMap<>();
        values.forEach((key, value) -> {
            boolean secret = key.contains("password") || key.contains("jaas") || key.contains("secret") || key.contains("token");
            shown.put(key, (secret ? "****" : value) + " (" + sources.get(key) + ")");
        });
        return shown;
    }

    private ConfigException fail(String key, String value, String why) {
        return new ConfigException(key, value, why + " (from " + sources.getOrDefault(key, "default") + ")");
    }

    /** Collects layers; later layers win. */
    public static final class Builder {
        private final Map<String, String> values = new HashMap<>();
        private final Map<String, String> sources = new HashMap<>();

        public Builder layer(Map<String, String> layer, String source) {
            layer.forEach((key, value) -> {
                values.put(key, value);
                sources.put(key, source);
            });
            return this;
        }

        public Settings build() {
            return new Settings(Map.copyOf(values), Map.copyOf(sources));
        }
    }
}
