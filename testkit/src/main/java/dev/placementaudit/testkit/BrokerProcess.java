package dev.placementaudit.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real KRaft broker in an OS process of its own ({@link BrokerMain}), so a test can take it away the way production
 * loses one: {@link #kill()} is SIGKILL (no flush, no controlled shutdown), and {@link #start()} brings it back on the
 * same log directory and ports, where it recovers its log as a crashed broker does. A single-node cluster on its own,
 * or one node of a {@link BrokerCluster}.
 */
public final class BrokerProcess implements KafkaBroker {
    private static final Duration READY = Duration.ofSeconds(90);

    private final Path dir;
    private final int port;
    private final int controllerPort;
    /** The system properties that make it one node of a cluster; none for a single node. */
    private final List<String> nodeProperties;
    private Process process;

    private BrokerProcess(Path dir, int port, int controllerPort, List<String> nodeProperties) {
        this.dir = dir;
        this.port = port;
        this.controllerPort = controllerPort;
        this.nodeProperties = nodeProperties;
    }

    /** Node {@code node} of a cluster, not started: {@link BrokerCluster} starts its nodes together (none is ready alone). */
    static BrokerProcess clusterNode(Path dir, int port, EmbeddedKafkaBroker.ClusterNode node, int controllerPort) {
        return new BrokerProcess(dir, port, controllerPort, List.of("-Dpa.broker.node-id=" + node.id(), "-Dpa.broker.voters=" + node.voters(),
                "-Dpa.broker.cluster-id=" + node.clusterId(), "-Dpa.broker.replicas=" + node.replicas()));
    }

    /** A broker on free ports in a new temporary directory, deleted on {@link #close()}; started. */
    public static BrokerProcess startEphemeral() {
        BrokerProcess broker = unstarted();
        broker.start();
        return broker;
    }

    /**
     * The same, not started yet: its address is known before anything listens there, for a test of what starts first
     * (nothing listens on its ports until {@link #start()}, though another process could take one meanwhile).
     */
    public static BrokerProcess unstarted() {
        try {
            return new BrokerProcess(Files.createTempDirectory("pa-broker-process-"), EmbeddedKafkaBroker.freePort(), EmbeddedKafkaBroker.freePort(),
                    List.of());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a directory for the broker", e);
        }
    }

    @Override
    public String bootstrapServers() {
        return "localhost:" + port;
    }

    /** Where the broker keeps its log: {@code <topic>-<partition>} directories of segments, for a test that reads them. */
    public Path dataDirectory() {
        return dir.resolve("data").resolve("log");
    }

    /** Starts the process (again) and waits until it says it is ready. */
    public synchronized void start() {
        spawn();
        awaitReady();
    }

    /** Starts the process (again), without waiting: a node of a cluster is ready only once a quorum of them runs. */
    synchronized void spawn() {
        if (process != null && process.isAlive()) {
            throw new IllegalStateException("the broker is running already");
        }
        Path log = dir.resolve("broker.log");
        try {
            Files.createDirectories(dir);
            if (Files.exists(log)) {
                // The last run's log is kept (what a killed node said before it died), the new one starts empty.
                Files.writeString(dir.resolve("broker.log.previous"), Files.readString(log), StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
                Files.delete(log);
            }
            List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx512m",
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"));
            command.addAll(nodeProperties);
            command.addAll(List.of("-cp", System.getProperty("java.class.path"), BrokerMain.class.getName(),
                    dir.resolve("data").toString(), Integer.toString(port), Integer.toString(controllerPort)));
            process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the broker process", e);
        }
    }

    /** Waits until the process says it is ready; fails with what it printed when it dies or takes too long. */
    synchronized void awaitReady() {
        Path log = dir.resolve("broker.log");
        try {
            long deadline = System.nanoTime() + READY.toNanos();
            while (!Files.readString(log).contains("broker ready")) {
                if (!process.isAlive() || System.nanoTime() > deadline) {
                    String output = Files.readString(log);
                    process.destroyForcibly();
                    throw new IllegalStateException("the broker process did not become ready within " + READY.toSeconds() + " s:\n" + output);
                }
                TimeUnit.MILLISECONDS.sleep(100);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the broker process", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted starting the broker", e);
        }
    }

    /** SIGKILL, and waits for the process to be gone: its clients find nothing listening until {@link #start()}. */
    public synchronized void kill() {
        if (process == null) {
            return;
        }
        process.destroyForcibly();
        try {
            process.waitFor(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** This broker alone: for a node of a cluster, its own listener (clients learn the others from it). */
    int port() {
        return port;
    }

    /** The process id of the running broker, for a bench that reads its CPU time. */
    synchronized long pid() {
        return process.pid();
    }

    public synchronized boolean isAlive() {
        return process != null && process.isAlive();
    }

    @Override
    public synchronized void close() {
        kill();
        EmbeddedKafkaBroker.deleteRecursively(dir);
    }
}
