package dev.placementaudit.cli;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * One service of the distribution, as a process this test starts, kills and restarts as an orchestrator would: a
 * start counts once the service says it is up (a service needs its broker and database at start, within
 * {@code connect.timeout}; from then on it rides out their outages by itself).
 */
final class SoakService {
    private final HttpClient http;
    private final SoakReport figures;
    final String name;
    final Launcher launcher;
    private final Path log;
    private final String ready;
    private final String[] args;
    private Process process;

    SoakService(HttpClient http, SoakReport figures, String name, Launcher launcher, Path log, String ready, String... args) {
        this.http = http;
        this.figures = figures;
        this.name = name;
        this.launcher = launcher;
        this.log = log;
        this.ready = ready;
        this.args = args;
    }

    synchronized void start() throws IOException {
        Path previous = log.resolveSibling(log.getFileName() + ".previous");
        if (Files.exists(log)) {
            Files.writeString(previous, Files.readString(log), java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
        }
        process = launcher.spawn(log, args);
        await().atMost(Duration.ofSeconds(90)).until(() -> log().contains(ready) || !process.isAlive());
        assertThat(process.isAlive()).as(name + " started: " + log()).isTrue();
    }

    synchronized boolean isAlive() {
        return process != null && process.isAlive();
    }

    synchronized void ensureRunning() throws IOException {
        if (!isAlive()) {
            start();
        }
    }

    void killAndRestart(Random random) {
        synchronized (this) {
            kill();
            figures.serviceKilled(name.startsWith("store") ? "store" : name);
        }
        ChaosSoakIT.sleep(500 + random.nextInt(3_000));
        try {
            start();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    synchronized void kill() {
        if (process != null) {
            process.destroyForcibly();
            try {
                process.waitFor(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** SIGTERM, and the exit it ends with. */
    synchronized void stop() throws InterruptedException {
        process.destroy();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as(name + " stops on SIGTERM: " + log()).isTrue();
    }

    /** What {@code /health} says, or "" when it does not answer. */
    String healthBody() {
        try {
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port() + "/health")).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
        } catch (IOException | InterruptedException e) {
            return "";
        }
    }

    private String port() {
        return launcher.env(name.equals("worker") ? "PA_WORKER_HTTP_PORT" : name.equals("collector") ? "PA_COLLECTOR_HTTP_PORT" : "PA_STORE_HTTP_PORT");
    }

    /** The HTTP status of {@code /health}, or -1 when it does not answer. */
    int health() {
        String port = launcher.env(name.equals("worker") ? "PA_WORKER_HTTP_PORT" : name.equals("collector") ? "PA_COLLECTOR_HTTP_PORT" : "PA_STORE_HTTP_PORT");
        try {
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health")).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException | InterruptedException e) {
            return -1;
        }
    }

    String log() {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "";
        }
    }
}
