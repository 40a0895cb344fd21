package dev.placementaudit.testkit;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real single-node KRaft broker (combined broker + controller) inside this JVM, built from Maven Central's
 * Kafka jars: no Docker, no scripts. Uses three stable entry points only (StorageTool.execute, KafkaConfig,
 * KafkaRaftServer), the same path {@code bin/kafka-server-start.sh} takes.
 *
 * <p>Transactions, idempotence and consumer groups all work on it: the internal topics are configured for a
 * single replica. Restartable on the same directory and ports, so crash and restart tests see the same log.
 */
public final class EmbeddedKafkaBroker implements KafkaBroker {
    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedKafkaBroker.class);
    private static final int START_ATTEMPTS = 3;

    private final Path dataDir;
    private final boolean deleteOnClose;
    private final int brokerPort;
    private final int controllerPort;
    /** The port clients are told to connect to: the broker's own, or a proxy's in front of it. */
    private final int advertisedPort;
    private final ClusterNode node;
    private KafkaRaftServer server;

    private EmbeddedKafkaBroker(Path dataDir, boolean deleteOnClose, int brokerPort, int controllerPort, int advertisedPort, ClusterNode node) {
        this.dataDir = dataDir;
        this.deleteOnClose = deleteOnClose;
        this.brokerPort = brokerPort;
        this.controllerPort = controllerPort;
        this.advertisedPort = advertisedPort;
        this.node = node;
    }

    /**
     * Which node of which cluster this broker is: its id, every controller of the static quorum ({@code id@host:port},
     * comma-separated), the cluster id all nodes are formatted with, and how many replicas every topic has (the
     * internal ones included; {@code min.insync.replicas} is one less, as production runs three).
     */
    public record ClusterNode(int id, String voters, String clusterId, int replicas) {
        /** The one node of a single-node cluster: everything at one replica. */
        static ClusterNode single(int controllerPort) {
            return new ClusterNode(1, "1@localhost:" + controllerPort, Uuid.randomUuid().toString(), 1);
        }

        int minInSync() {
            return Math.max(1, replicas - 1);
        }
    }

    /** A throwaway broker on free ports in a temporary directory, deleted on close. */
    public static EmbeddedKafkaBroker startEphemeral() {
        RuntimeException last = null;
        for (int attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
            Path dir = createTempDir();
            // Free ports are picked, released, then bound by the broker: another process can take one in between.
            int port = freePort();
            int controllerPort = freePort();
            EmbeddedKafkaBroker broker = new EmbeddedKafkaBroker(dir, true, port, controllerPort, port, ClusterNode.single(controllerPort));
            try {
                broker.start();
                return broker;
            } catch (RuntimeException e) {
                last = e;
                broker.close();
                LOG.warn("embedded broker start attempt {} failed: {}", attempt, e.toString());
            }
        }
        throw new IllegalStateException("embedded Kafka broker did not start after " + START_ATTEMPTS + " attempts", last);
    }

    /** A broker that keeps its log in {@code dataDir} across runs (the demo), on fixed ports. */
    public static EmbeddedKafkaBroker startPersistent(Path dataDir, int brokerPort, int controllerPort) {
        return startPersistent(dataDir, brokerPort, controllerPort, brokerPort);
    }

    /**
     * The same, telling clients to connect to {@code advertisedPort} instead, where a proxy forwards to
     * {@code brokerPort} (the benchmark's emulated network hop). Every client connection then goes through it,
     * the broker's own to itself included; the proxy must be listening before this is called.
     */
    public static EmbeddedKafkaBroker startPersistent(Path dataDir, int brokerPort, int controllerPort, int advertisedPort) {
        return startPersistent(dataDir, brokerPort, controllerPort, advertisedPort, ClusterNode.single(controllerPort));
    }

    /** One node of a cluster of several ({@link BrokerCluster}): ready once a quorum of its controllers answers. */
    public static EmbeddedKafkaBroker startPersistent(Path dataDir, int brokerPort, int controllerPort, int advertisedPort, ClusterNode node) {
        EmbeddedKafkaBroker broker = new EmbeddedKafkaBroker(dataDir, false, brokerPort, controllerPort, advertisedPort, node);
        broker.start();
        return broker;
    }

    @Override
    public String bootstrapServers() {
        return "localhost:" + advertisedPort;
    }

    public Path dataDir() {
        return dataDir;
    }

    /** Stops the broker without deleting its log, as a crash followed by a restart would find it. */
    public synchronized void stop() {
        if (server != null) {
            server.shutdown();
            server.awaitShutdown();
            server = null;
        }
    }

    /** Starts again on the same directory and ports. */
    public synchronized void restart() {
        stop();
        start();
    }

    @Override
    public synchronized void close() {
        try {
            stop();
        } finally {
            if (deleteOnClose) {
                deleteRecursively(dataDir);
            }
        }
    }

    private synchronized void start() {
        long began = System.nanoTime();
        Path logDir = dataDir.resolve("log");
        Properties props = brokerProperties(logDir);
        if (!Files.exists(logDir.resolve("meta.properties"))) {
            format(props);
        }
        server = new KafkaRaftServer(KafkaConfig.fromProps(props, false), Time.SYSTEM);
        server.startup();
        awaitReady();
        LOG.info("embedded Kafka broker ready at {} in {} ms", bootstrapServers(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began));
    }

    private Properties brokerProperties(Path logDir) {
        Properties props = new Properties();
        props.putAll(Map.ofEntries(
                Map.entry("process.roles", "broker,controller"),
                Map.entry("node.id", Integer.toString(node.id())),
                Map.entry("controller.quorum.voters", node.voters()),
                Map.entry("listeners", "PLAINTEXT://localhost:" + brokerPort + ",CONTROLLER://localhost:" + controllerPort),
                Map.entry("advertised.listeners", "PLAINTEXT://localhost:" + advertisedPort),
                Map.entry("controller.listener.names", "CONTROLLER"),
                Map.entry("inter.broker.listener.name", "PLAINTEXT"),
                Map.entry("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"),
                Map.entry("log.dirs", logDir.toString()),
                Map.entry("num.partitions", "1"),
                Map.entry("default.replication.factor", Integer.toString(node.replicas())),
                Map.entry("offsets.topic.replication.factor", Integer.toString(node.replicas())),
                Map.entry("offsets.topic.num.partitions", "1"),
                Map.entry("transaction.state.log.replication.factor", Integer.toString(node.replicas())),
                Map.entry("transaction.state.log.min.isr", Integer.toString(node.minInSync())),
                Map.entry("transaction.state.log.num.partitions", "1"),
                Map.entry("share.coordinator.state.topic.replication.factor", Integer.toString(node.replicas())),
                Map.entry("share.coordinator.state.topic.min.isr", Integer.toString(node.minInSync())),
                Map.entry("min.insync.replicas", Integer.toString(node.minInSync())),
                // A node killed with SIGKILL is fenced by the controllers, and so leaves every ISR, after this long without a
                // heartbeat: until then, writes with acks=all to a partition it followed wait for it (default 9 s).
                Map.entry("broker.session.timeout.ms", "6000"),
                Map.entry("group.initial.rebalance.delay.ms", "0"),
                // Services create their topics; a typo in a topic name must fail, not silently create one.
                Map.entry("auto.create.topics.enable", "false"),
                // The default allocates a 128 MiB on-heap dedupe buffer, most of a small test JVM.
                Map.entry("log.cleaner.dedupe.buffer.size", "2097152")));
        return props;
    }

    private void format(Properties props) {
        Path config = dataDir.resolve("server.properties");
        try {
            Files.createDirectories(dataDir);
            try (Writer out = Files.newBufferedWriter(config)) {
                props.store(out, "embedded placement-audit broker");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + config, e);
        }
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        int rc = StorageTool.execute(new String[]{"format", "-t", node.clusterId(), "-c", config.toString(),
                "--ignore-formatted"}, new PrintStream(output, true, StandardCharsets.UTF_8));
        if (rc != 0) {
            throw new IllegalStateException("formatting Kafka storage in " + dataDir + " failed (exit " + rc + "): "
                    + output.toString(StandardCharsets.UTF_8));
        }
    }

    private void awaitReady() {
        Map<String, Object> config = Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
        try (Admin admin = Admin.create(config)) {
            admin.describeCluster().nodes().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("embedded broker at " + bootstrapServers() + " did not become ready", e);
        }
    }

    /** A port nothing listens on now (released before returning, so another process may yet take it). */
    public static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free local port", e);
        }
    }

    private static Path createTempDir() {
        try {
            return Files.createTempDirectory("pa-kafka-");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a temporary directory", e);
        }
    }

    static void deleteRecursively(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            LOG.warn("could not delete {}: {}", dir, e.toString());
        }
    }
}
