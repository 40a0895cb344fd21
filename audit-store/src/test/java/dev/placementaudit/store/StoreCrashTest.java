package dev.placementaudit.store;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.PostgresServer;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The store as a real process, killed with SIGKILL mid-ingest, then restarted. */
@ExtendWith(KafkaBrokerExtension.class)
class StoreCrashTest {
    private static final int LOADS = 800;
    private static final int TENSORS = 4;

    @DatabaseTest
    void killedMidIngestAndRestartedLosesNothingAndDuplicatesNothing(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        List<ModelLoaded> loads = IntStream.range(0, LOADS).mapToObj(i -> StoreHarness.load("d" + (i % 40), "r" + (i / 40), 2, i, false)).toList();
        h.publish(loads);
        Map<String, String> settings = h.settings();
        // Small batches: many transactions, so the kill lands in the middle of ingestion. H2 commits so cheaply
        // that it needs one record per transaction to still be busy when the kill comes.
        settings.put("store.max.poll.records", db.kind() == TestDatabase.Kind.H2 ? "1" : "3");
        settings.put("kafka.session.timeout.ms", "6000");
        settings.put("kafka.heartbeat.interval.ms", "1000");
        Path log = Path.of("target", "store-crash-" + h.group + "-" + db.kind() + ".log");

        java.util.concurrent.atomic.AtomicLong observed = new java.util.concurrent.atomic.AtomicLong();
        Process first = StoreProcess.start(settings, log);
        try {
            // Touch the database only once the store has opened and migrated it: with H2 the first opener serves the file.
            await().atMost(Duration.ofSeconds(60)).until(() -> Files.exists(log) && Files.readString(log).contains("audit-store ingesting"));
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(10)).ignoreExceptions().until(() -> {
                observed.set(h.count("SELECT COUNT(*) FROM load_tensors"));
                return observed.get() > 20;
            });
        } finally {
            first.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
        // H2 writes committed changes to its file up to ~0.5 s late (WRITE_DELAY), so a SIGKILL can take the last
        // commits with it - their offsets too, since both are in one transaction: those records are simply consumed again.
        long atKill = observed.get();
        Process second = StoreProcess.start(settings, log);
        try {
            // Again only once the new process has the database open (H2 keeps it locked for a while after a crash).
            await().atMost(Duration.ofSeconds(60)).until(() -> occurrences(Files.readString(log), "audit-store ingesting") >= 2);
            await().atMost(Duration.ofSeconds(120)).ignoreExceptions().until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == LOADS);
            assertThat(h.count("SELECT COUNT(*) FROM load_tensors")).isEqualTo((long) LOADS * TENSORS);
            assertThat(h.count("SELECT SUM(next_offset) FROM ingest_offsets")).isEqualTo((long) LOADS * TENSORS + LOADS);
            // Every release after the first is compared with its predecessor once: no finding twice.
            assertThat(h.count("SELECT COUNT(*) FROM (SELECT load_id, kind, tensor_name, COUNT(*) AS n FROM findings "
                    + "GROUP BY load_id, kind, tensor_name) x WHERE n > 1")).isZero();
        } finally {
            second.destroy();
            second.waitFor(30, TimeUnit.SECONDS);
        }
        assertThat(atKill).as("killed mid-ingest").isBetween(1L, (long) LOADS * TENSORS - 1);
        // The chain the two processes wrote holds, and agrees with every head they published, those the killed one sent
        // for commits H2 then lost included: re-ingested, the same loads chain to the same hashes.
        try (java.sql.Connection c = db.dataSource().getConnection()) {
            var report = dev.placementaudit.store.chain.ChainVerifier.verify(c, java.util.Optional.empty(), java.util.Optional.of(
                    dev.placementaudit.store.chain.ChainLog.read(broker.clientConfig(), h.chain, h.group, Duration.ofSeconds(10))));
            assertThat(report.breaks()).isEmpty();
            assertThat(report.entries()).isEqualTo(LOADS);
            assertThat(report.chains()).hasSize(40).allMatch(chain -> chain.publishedHeadChecked());
        }
    }

    /**
     * Static membership at work: the restarted process rejoins as the same member, so the group hands its partitions back
     * at once instead of waiting out the killed one's session (45 s by default, left as it is here). PostgreSQL only: after
     * a SIGKILL, H2 keeps its file locked until it sees its old server is gone, which is H2's time, not the store's.
     *
     * <p>The bound is 10 s, JVM start included, a quarter of the session it guards against. The figure itself comes from
     * {@code bench/run.sh restart} on the machine at hand: a median of 2.4 s on one 2-core machine, 7.8 s on another,
     * where this test measured 4.3 to 6.2 s with the code before and after the change that set the bound. Start-up
     * there is CPU: about 1.7 s to reach the store's start, 1.4 s for the broker's first answer and 1.2 s for the
     * database, each mostly class loading.
     */
    @Test
    void aStoreKilledWithSigkillIsBackAndCommittingWithinSeconds(KafkaBroker broker) throws Exception {
        try (TestDatabase db = PostgresServer.fromEnvironment().createIsolatedSchema()) {
            StoreHarness h = new StoreHarness(broker, db);
            h.publish(IntStream.range(0, 20).mapToObj(i -> StoreHarness.load("d" + i, "r1", 2, i, false)).toList());
            Map<String, String> settings = h.settings();
            Path log = Path.of("target", "store-restart-" + h.group + ".log");
            Process first = StoreProcess.start(settings, log);
            try {
                await().atMost(Duration.ofSeconds(60)).ignoreExceptions().until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 20);
            } finally {
                first.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            }
            h.publish(IntStream.range(0, 20).mapToObj(i -> StoreHarness.load("d" + i, "r2", 2, 100 + i, false)).toList());
            long committed = h.count("SELECT SUM(next_offset) FROM ingest_offsets");

            // Watched through one connection: a new one every 50 ms would have PostgreSQL start a backend process
            // that often, on the cores the restarting store needs.
            try (java.sql.Connection watch = db.connect();
                 java.sql.PreparedStatement offsets = watch.prepareStatement("SELECT SUM(next_offset) FROM ingest_offsets")) {
                watch.setAutoCommit(true);
                long restarted = System.nanoTime();
                Process second = StoreProcess.start(settings, log);
                try {
                    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
                            .until(() -> {
                                try (java.sql.ResultSet rs = offsets.executeQuery()) {
                                    rs.next();
                                    return rs.getLong(1) > committed;
                                }
                            });
                    Duration toFirstCommit = Duration.ofNanos(System.nanoTime() - restarted);
                    System.out.println("StoreCrashTest: process start to first commit " + toFirstCommit.toMillis() + " ms");

                    assertThat(toFirstCommit).as("process start to first commit, JVM start included").isLessThan(Duration.ofSeconds(10));
                    await().atMost(Duration.ofSeconds(60)).ignoreExceptions().until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 40);
                } finally {
                    second.destroy();
                    second.waitFor(30, TimeUnit.SECONDS);
                }
            }
        }
    }

    private static int occurrences(String text, String needle) {
        int count = 0;
        for (int at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) {
            count++;
        }
        return count;
    }

}
