package dev.placementaudit.cli;

import dev.placementaudit.testkit.EmbeddedKafkaBroker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The production path from the distribution: {@code worker run} and {@code store run} as two processes on a real
 * broker, a fleet published with {@code producer simulate}, every load found complete with {@code store where}, and
 * both services stopping cleanly on SIGTERM.
 */
class ServicesIT {
    static EmbeddedKafkaBroker broker;

    @TempDir
    Path work;

    @BeforeAll
    static void startABroker() {
        broker = EmbeddedKafkaBroker.startEphemeral();
    }

    @AfterAll
    static void stopTheBroker() {
        broker.close();
    }

    @Test
    void workerAndStoreRunFromTheLauncherAndStopOnSigterm() throws Exception {
        Launcher launcher = Launcher.of(Launcher.packagedHome(), work).withEnv(Map.of("KAFKA_BOOTSTRAP_SERVERS", broker.bootstrapServers(),
                "PA_WORKER_HTTP_PORT", "0", "PA_STORE_HTTP_PORT", "0", "PA_WORKER_INSTANCE_ID", "it-worker", "JAVA_OPTS", "-Xmx512m"));
        Process worker = launcher.spawn(work.resolve("worker.log"), "worker", "run");
        Process store = launcher.spawn(work.resolve("store.log"), "store", "run");
        try {
            // As an operator would: publish once both services say they are up (the worker creates the topics).
            await().atMost(Duration.ofSeconds(60)).until(() -> log("worker.log").contains("consuming model-loads")
                    && log("store.log").contains("audit-store ingesting"));
            Launcher.Run simulated = launcher.run(Duration.ofSeconds(60), "producer", "simulate", "--deployments", "2", "--releases", "r1,r2",
                    "--drift", "r2:dequantize=*ffn_down*");
            assertThat(simulated.exit()).as(simulated.toString()).isZero();
            assertThat(simulated.out()).contains("simulated 8 loads");

            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
                Launcher.Run where = launcher.run(Duration.ofSeconds(30), "store", "where", "--format", "json", "--limit", "100");
                assertThat(where.exit()).as(where.toString()).isZero();
                assertThat(where.out().split("\"complete\" : true", -1)).as(where.out()).hasSize(9);
            });
            Launcher.Run diff = launcher.run(Duration.ofSeconds(30), "store", "diff", "--deployment", "android-000", "--model",
                    "llama-3.2-1b-q4km", "--from", "r1", "--to", "r2");
            assertThat(diff.exit()).as(diff.toString()).isZero();
            assertThat(diff.out()).contains("LOST_MAPPING=16");
        } finally {
            worker.destroy();
            store.destroy();
        }
        assertThat(worker.waitFor(30, TimeUnit.SECONDS)).as(log("worker.log")).isTrue();
        assertThat(store.waitFor(30, TimeUnit.SECONDS)).as(log("store.log")).isTrue();
        // 143 = 128 + SIGTERM: the JVM reports the signal once its shutdown hooks (the graceful stop) have run.
        assertThat(worker.exitValue()).as(log("worker.log")).isIn(0, 143);
        assertThat(store.exitValue()).as(log("store.log")).isIn(0, 143);
        assertThat(log("store.log")).doesNotContain("EMBEDDED H2").contains("audit-store stopped");
        assertThat(log("worker.log")).contains("resolver-worker it-worker stopped");
    }

    private String log(String name) {
        try {
            return Files.readString(work.resolve(name));
        } catch (java.io.IOException e) {
            return "(no " + name + ": " + e + ")";
        }
    }
}
