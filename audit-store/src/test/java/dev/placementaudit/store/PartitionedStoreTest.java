package dev.placementaudit.store;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.store.db.LoadPartitions;
import dev.placementaudit.testkit.DatabaseTargets;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.YearMonth;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code load_rows} partitioned by month on PostgreSQL (V27, docs/adr/0024): a store filled before V27 is brought over
 * without a row copied (its table becomes the partition of everything before its first month), and {@code store prune}
 * drops a month whole, moving the loads it keeps to the default partition, with the same outcome as the prune by rows
 * that H2 runs ({@link RetentionTest} runs on both).
 */
@ExtendWith(KafkaBrokerExtension.class)
class PartitionedStoreTest {

    @Test
    void aStoreFilledBeforeV27KeepsItsTableAsThePartitionOfItsPast() throws Exception {
        try (TestDatabase db = DatabaseTargets.open(TestDatabase.Kind.POSTGRESQL)) {
            Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").target("26").load().migrate();
            Instant latest = Instant.parse("2026-06-30T23:00:00Z");
            long fileBefore;
            try (Connection c = db.connect(); Statement s = c.createStatement()) {
                for (String at : List.of("2026-01-15T00:00:00Z", "2026-03-01T00:00:00Z", latest.toString())) {
                    s.executeUpdate("INSERT INTO load_rows (load_id, deployment_id, release_name, model_id, site_key, build_key, occurred_at, "
                            + "tensor_count, stored_bytes, resident_bytes, heap_bytes, offheap_bytes, mapped_bytes, heap_tensors, offheap_tensors, "
                            + "mapped_tensors, resolved_at, complete) VALUES ('load-" + at + "', 'edge-1', 'r1', 'm', 1, 1, TIMESTAMP WITH TIME ZONE '"
                            + at + "', 1, 1, 1, 1, 0, 0, 1, 0, 0, TIMESTAMP WITH TIME ZONE '" + at + "', FALSE)");
                }
                fileBefore = number(s, "SELECT pg_relation_filenode('load_rows')");
            }

            Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").load().migrate();

            YearMonth first = YearMonth.now(ZoneOffset.UTC).plusMonths(1);
            String past = String.format("load_rows_before_%04d_%02d", first.getYear(), first.getMonthValue());
            try (Connection c = db.connect(); Statement s = c.createStatement()) {
                assertThat(LoadPartitions.partitioned(c)).isTrue();
                assertThat(LoadPartitions.list(c)).extracting(LoadPartitions.Partition::name).containsExactly(past,
                        month(first), month(first.plusMonths(1)), month(first.plusMonths(2)), "load_rows_default");
                assertThat(number(s, "SELECT pg_relation_filenode('" + past + "')")).as("the table as it was, not a copy").isEqualTo(fileBefore);
                assertThat(number(s, "SELECT COUNT(*) FROM " + past)).isEqualTo(3);
                assertThat(number(s, "SELECT COUNT(*) FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid WHERE r.ev_class = 'loads'::regclass "
                        + "AND d.refobjid = 'load_rows'::regclass")).as("the views read the partitioned table").isPositive();
                assertThat(number(s, "SELECT COUNT(*) FROM load_rows WHERE deployment_id = 'edge-1'")).isEqualTo(3);
                // Its indexes became the parent's, none built beside them on attach (the primary key, now with the time, was
                // built; later migrations' indexes are new).
                assertThat(number(s, "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = '" + past + "'"))
                        .isEqualTo(number(s, "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'load_rows'"));
                assertThat(number(s, "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = '" + past + "' AND indexname LIKE '%\\_v26'")).isEqualTo(7);
                s.executeUpdate("INSERT INTO load_rows (load_id, deployment_id, release_name, model_id, site_key, build_key, occurred_at, tensor_count, "
                        + "stored_bytes, resident_bytes, heap_bytes, offheap_bytes, mapped_bytes, heap_tensors, offheap_tensors, mapped_tensors, "
                        + "resolved_at, complete) VALUES ('next', 'edge-1', 'r2', 'm', 1, 1, TIMESTAMP WITH TIME ZONE '" + first.atDay(2) + " 00:00:00+00', "
                        + "1, 1, 1, 1, 0, 0, 1, 0, 0, CURRENT_TIMESTAMP, FALSE)");
                try (ResultSet rs = s.executeQuery("SELECT tableoid::regclass::text FROM load_rows WHERE load_id = 'next'")) {
                    rs.next();
                    assertThat(rs.getString(1)).isEqualTo(month(first));
                }
            }
        }
    }

    @Test
    void pruneDropsAMonthWholeAndKeepsWhatTheRowByRowPruneKeeps(KafkaBroker broker) throws Exception {
        try (TestDatabase db = DatabaseTargets.open(TestDatabase.Kind.POSTGRESQL)) {
            StoreHarness h = novemberAndDecember(broker, db);
            String[] settings = CliRun.settings(h);

            CliRun dryRun = CliRun.run(settings, "prune", "--before", "2026-12-01T00:00:00Z", "--dry-run");
            assertThat(dryRun.out()).contains("would drop 2 loads").doesNotContain("dropped whole");
            assertThat(h.count("SELECT COUNT(*) FROM load_rows_2026_11")).isEqualTo(5);

            assertPrunedNovember(h, db, settings);

            // Ingest goes on, and a load of the dropped month arriving late lands in the default partition.
            h.publish(List.of(StoreHarness.load("phone-1", "r5", 2, 24 * 36, false), StoreHarness.load("phone-3", "r1", 2, 3, false)));
            try (AuditStore store = h.start()) {
                await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM chain_entries") == 6);
            }
            assertThat(h.count("SELECT COUNT(*) FROM load_rows_default WHERE deployment_id = 'phone-3'")).isEqualTo(1);
            assertThat(CliRun.run(settings, "verify").exit()).isZero();
        }
    }

    /**
     * A prune killed with SIGKILL half-way, its transaction holding the month's dependent rows deleted and waiting to
     * detach the month, leaves the store as it was: PostgreSQL rolls back what the dead client never committed. Run
     * again, it prunes as if nothing had happened.
     */
    @Test
    void aPruneKilledHalfWayLeavesTheStoreAsItWasAndRunsAgain(KafkaBroker broker) throws Exception {
        try (TestDatabase db = DatabaseTargets.open(TestDatabase.Kind.POSTGRESQL)) {
            StoreHarness h = novemberAndDecember(broker, db);
            String[] settings = CliRun.settings(h);
            long alerts = h.count("SELECT COUNT(*) FROM alerts");
            long decisions = h.count("SELECT COUNT(*) FROM decisions");
            Path log = Path.of("target", "prune-killed-" + h.group + ".log");
            try (Connection reader = db.connect(); Statement s = reader.createStatement()) {
                // A reader of the month (a dashboard's query, say) holds the detach back: the prune has deleted what hangs on
                // the month's loads and waits, mid-transaction, when it is killed.
                reader.setAutoCommit(false);
                assertThat(number(s, "SELECT COUNT(*) FROM load_rows_2026_11")).isEqualTo(5);
                List<String> args = new ArrayList<>(List.of("prune", "--before", "2026-12-01T00:00:00Z"));
                args.addAll(List.of(settings));
                Process prune = StoreProcess.command(args, log);
                long waiting = await().atMost(Duration.ofSeconds(60)).until(() -> waitingBackend(db), pid -> pid > 0);
                assertThat(Files.readString(log)).contains("dropping the months whole").doesNotContain("dropped whole,");
                prune.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
                reader.commit();
                // Each look its own transaction: pg_stat_activity is read once per transaction. The server ends the dead
                // client's session once the lock is granted and it finds the connection gone.
                reader.setAutoCommit(true);
                await().atMost(Duration.ofSeconds(30)).until(() -> number(s, "SELECT COUNT(*) FROM pg_stat_activity WHERE pid = " + waiting) == 0);
            }
            try (Connection c = db.connect()) {
                assertThat(LoadPartitions.list(c)).extracting(LoadPartitions.Partition::name).contains("load_rows_2026_11");
            }
            assertThat(h.count("SELECT COUNT(*) FROM load_rows_2026_11")).isEqualTo(5);
            assertThat(h.count("SELECT COUNT(*) FROM loads")).isEqualTo(6);
            assertThat(h.count("SELECT COUNT(*) FROM alerts")).isEqualTo(alerts);
            assertThat(h.count("SELECT COUNT(*) FROM decisions")).isEqualTo(decisions);
            StoreHarness.assertReleaseHeads(h);
            CliRun verify = CliRun.run(settings, "verify");
            assertThat(verify.exit()).as(verify.out()).isZero();
            assertThat(verify.out()).contains("2 deployments, 6 chained loads").contains("every chain holds");

            assertPrunedNovember(h, db, settings);
        }
    }

    /** A store that has run since November (its months made, T0 is 2026-11-01): six loads, five of them in November. */
    private static StoreHarness novemberAndDecember(KafkaBroker broker, TestDatabase db) throws Exception {
        Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").load().migrate();
        try (Connection c = db.connect()) {
            LoadPartitions.create(c, YearMonth.of(2026, 11));
            LoadPartitions.create(c, YearMonth.of(2026, 12));
        }
        StoreHarness h = new StoreHarness(broker, db);
        List<ModelLoaded> loads = new ArrayList<>();
        for (int release = 1; release <= 3; release++) {
            loads.add(StoreHarness.load("phone-1", "r" + release, 2, 24 * (release - 1), release == 2));
        }
        loads.add(StoreHarness.load("phone-1", "r4", 2, 24 * 35, false));
        loads.add(StoreHarness.load("phone-2", "r1", 2, 1, false));
        loads.add(StoreHarness.load("phone-2", "r2", 2, 25, true));
        h.publish(loads);
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM chain_entries") == 6);
        }
        assertThat(h.count("SELECT COUNT(*) FROM load_rows_2026_11")).isEqualTo(5);
        assertThat(h.count("SELECT COUNT(*) FROM alerts WHERE to_load_id IN (SELECT load_id FROM load_rows_2026_11)")).isPositive();
        return h;
    }

    /** {@code store prune} of November, and the store it leaves. */
    private static void assertPrunedNovember(StoreHarness h, TestDatabase db, String[] settings) throws Exception {
        CliRun prune = CliRun.run(settings, "prune", "--before", "2026-12-01T00:00:00Z");
        assertThat(prune.exit()).as(prune.err()).isZero();
        // phone-1's r1 and r2 go; r3 stays (r4 was compared with it), and phone-2's r2 with its predecessor r1.
        assertThat(prune.out()).contains("[1/2] phone-1: dropped 2 loads, 8 decisions, chain now starts after entry 2")
                .contains("load_rows_2026_11: dropped whole, 5 loads (3 kept, moved to load_rows_default)")
                .contains("dropped 2 loads (8 decisions) of 1 deployments").contains("months of load_rows dropped whole: load_rows_2026_11");
        try (Connection c = db.connect()) {
            assertThat(LoadPartitions.list(c)).extracting(LoadPartitions.Partition::name).doesNotContain("load_rows_2026_11");
        }
        assertThat(h.count("SELECT COUNT(*) FROM load_rows_default")).isEqualTo(3);
        assertThat(h.count("SELECT COUNT(*) FROM loads")).isEqualTo(4);
        assertThat(h.count("SELECT COUNT(*) FROM loads WHERE deployment_id = 'phone-1' AND release_name IN ('r1', 'r2')")).isZero();
        assertThat(h.count("SELECT COUNT(*) FROM alerts WHERE to_load_id NOT IN (SELECT load_id FROM load_rows)"))
                .as("what hung on the month's dropped loads went with them").isZero();
        assertThat(h.count("SELECT COUNT(*) FROM plans")).isEqualTo(h.count("SELECT COUNT(DISTINCT plan_digest) FROM loads"));
        StoreHarness.assertReleaseHeads(h);
        assertThat(CliRun.run(settings, "diff", "--deployment", "phone-1", "--model", "sample-model", "--from", "r3", "--to", "r4").exit())
                .isZero();
        // Every entry again: a verify before the prune may have marked the chains.
        CliRun verify = CliRun.run(settings, "verify", "--full");
        assertThat(verify.exit()).as(verify.out()).isZero();
        assertThat(verify.out()).contains("2 deployments, 4 chained loads").contains("every chain holds");
    }

    /** The server process of a session waiting for a lock on November's partition, or 0 while none is. */
    private static long waitingBackend(TestDatabase db) throws Exception {
        try (Connection c = db.connect(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT pid FROM pg_locks WHERE NOT granted AND relation = 'load_rows_2026_11'::regclass")) {
            return rs.next() ? rs.getLong(1) : 0;
        }
    }

    /**
     * The months ahead (what a running store makes every six hours): created once, and a month whose loads already landed
     * in the default partition (a clock ahead of the store's) takes them in with it.
     */
    @Test
    void theMonthsAheadAreMadeOnceAndTakeInTheLoadsTheDefaultPartitionHeld() throws Exception {
        try (TestDatabase db = DatabaseTargets.open(TestDatabase.Kind.POSTGRESQL)) {
            Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").load().migrate();
            try (Connection c = db.connect(); Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO load_rows (load_id, deployment_id, release_name, model_id, site_key, build_key, occurred_at, tensor_count, "
                        + "stored_bytes, resident_bytes, heap_bytes, offheap_bytes, mapped_bytes, heap_tensors, offheap_tensors, mapped_tensors, "
                        + "resolved_at, complete) VALUES ('ahead', 'edge-1', 'r1', 'm', 1, 1, TIMESTAMP WITH TIME ZONE '2030-06-15 00:00:00+00', "
                        + "1, 1, 1, 1, 0, 0, 1, 0, 0, CURRENT_TIMESTAMP, FALSE)");
                assertThat(number(s, "SELECT COUNT(*) FROM load_rows_default")).isEqualTo(1);

                assertThat(LoadPartitions.ensureAhead(c, Instant.parse("2030-05-10T00:00:00Z")))
                        .containsExactly("load_rows_2030_05", "load_rows_2030_06", "load_rows_2030_07");
                assertThat(LoadPartitions.ensureAhead(c, Instant.parse("2030-05-20T00:00:00Z"))).as("made once").isEmpty();
                assertThat(number(s, "SELECT COUNT(*) FROM load_rows_default")).isZero();
                try (ResultSet rs = s.executeQuery("SELECT tableoid::regclass::text FROM load_rows WHERE load_id = 'ahead'")) {
                    rs.next();
                    assertThat(rs.getString(1)).isEqualTo("load_rows_2030_06");
                }
            }
        }
    }

    private static String month(YearMonth m) {
        return String.format("load_rows_%04d_%02d", m.getYear(), m.getMonthValue());
    }

    private static long number(Statement s, String sql) throws Exception {
        try (ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
