package dev.placementaudit.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real single-node KRaft broker in an OS process of its own ({@link BrokerMain}), so a test can take it away the way
 * production loses one: {@link #kill()} is SIGKILL (no flush, no controlled shutdown), and {@link #start()} brings it
 * back on the same log directory and ports, where it recovers its log as a crashed broker does.
 */
public final class BrokerProcess implements KafkaBroker {
    private static final Duration READY = Duration.ofSeconds(90);

    private final Path dir;
    private final int port;
    private final int controllerPort;
    private Process process;

    private BrokerProcess(Path dir, int port, int controllerPort) {
        this.dir = dir;
        this.port = port;
        this.controllerPort = controllerPort;
    }

    /** A broker on free ports in a new temporary directory, deleted on {@link #close()}; started. */
    public static BrokerProcess startEphemeral() {
        try {
            BrokerProcess broker = new BrokerProcess(Files.createTempDirectory("pa-broker-process-"), EmbeddedKafkaBroker.freePort(),
                    EmbeddedKafkaBroker.freePort());
            broker.start();
            return broker;
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
        if (process != null && process.isAlive()) {
            throw new IllegalStateException("the broker is running already");
        }
        Path log = dir.resolve("broker.log");
        try {
            Files.deleteIfExists(log);
            process = new ProcessBuilder(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx512m",
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", System.getProperty("java.class.path"), BrokerMain.class.getName(),
                    dir.resolve("data").toString(), Integer.toString(port), Integer.toString(controllerPort)))
                    .redirectErrorStream(true).redirectOutput(log.toFile()).start();
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

    public synchronized boolean isAlive() {
        return process != null && process.isAlive();
    }

    @Override
    public synchronized void close() {
        kill();
        EmbeddedKafkaBroker.deleteRecursively(dir);
    }
}
