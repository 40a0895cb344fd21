package dev.placementaudit.store;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.store.plans.StoredPlans;
import dev.placementaudit.store.chain.ChainLog;
import dev.placementaudit.store.chain.ChainVerifier;
import dev.placementaudit.store.chain.HashChain;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.extension.ExtendWith;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The audit trail's tamper evidence, on a store that really ingested: each way of rewriting history by hand is caught
 * by {@code store verify} and named, and an untouched deployment verifies clean.
 */
@ExtendWith(KafkaBrokerExtension.class)
class ChainTamperTest {
    private static final List<String> DEPLOYMENTS = List.of("d-update", "d-delete", "d-reorder", "d-insert", "d-rewrite", "d-site", "d-clean");

    @DatabaseTest
    void everyRewriteOfHistoryIsCaughtAndNamed(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        List<ModelLoaded> loads = new ArrayList<>();
        for (String deployment : DEPLOYMENTS) {
            for (int release = 1; release <= 3; release++) {
                // The deployments whose plans are tampered with have plans of their own (a tampered plan breaks every load
                // that names it, on any deployment: that is what sharing plans means).
                int quantized = deployment.equals("d-update") ? 3 : deployment.equals("d-rewrite") ? 4 : 2;
                loads.add(StoreHarness.load(deployment, "r" + release, quantized, 24 * release, release == 3));
            }
        }
        h.publish(loads);
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM chain_entries") == loads.size());
        } // closing flushes the last heads to the chain topic
        await().atMost(Duration.ofSeconds(30)).until(() -> ChainLog.read(broker.clientConfig(), h.chain, h.group, Duration.ofSeconds(10)).heads().values().stream()
                .mapToLong(heads -> heads.get(heads.size() - 1).seq()).sum() == loads.size());
        String[] settings = CliRun.settings(h);

        CliRun clean = verify(settings);
        assertThat(clean.exit()).as(clean.out() + clean.err()).isZero();
        assertThat(clean.out()).contains("7 deployments, 21 chained loads, checked against " + h.chain + ": every chain holds");

        try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
            // An UPDATE of one decision's domain, in the plan the load names.
            setTensor(s, db.kind(), loadOf(loads, "d-update", 2), 1, "memory_domain", "'HOST_HEAP'");
            // A DELETE of one load: its decisions and its row, which holds its chain entry (docs/adr/0015).
            String deleted = loadOf(loads, "d-delete", 2);
            s.executeUpdate("DELETE FROM decisions WHERE load_id = '" + deleted + "'");
            s.executeUpdate("DELETE FROM load_rows WHERE load_id = '" + deleted + "'");
            // A reordering: entries 2 and 3 swap places.
            s.executeUpdate("UPDATE load_rows SET chain_seq = -1 WHERE deployment_id = 'd-reorder' AND chain_seq = 2");
            s.executeUpdate("UPDATE load_rows SET chain_seq = 2 WHERE deployment_id = 'd-reorder' AND chain_seq = 3");
            s.executeUpdate("UPDATE load_rows SET chain_seq = 3 WHERE deployment_id = 'd-reorder' AND chain_seq = -1");
            // And its first entry copied to the end, among the entries chained before V20: the same load chained twice.
            HashChain.Entry first = HashChain.entries(c, "d-reorder").get(0);
            try (PreparedStatement copy = c.prepareStatement("INSERT INTO chain_entries_legacy (deployment_id, seq, load_id, load_hash, entry_hash, "
                    + "encoding) VALUES ('d-reorder', 4, ?, ?, ?, 2)")) {
                copy.setString(1, first.loadId());
                copy.setBytes(2, HashChain.bytes(HashChain.loadHash(c, first.loadId(), 2).orElseThrow()));
                copy.setBytes(3, HashChain.bytes(first.entryHash()));
                copy.executeUpdate();
            }
            // A load inserted by hand: a copy of a real one under a new id, with no chain entry.
            List<String> rowColumns = rowColumns(c);
            s.executeUpdate("INSERT INTO load_rows (" + String.join(", ", rowColumns) + ") SELECT '00000000-0000-0000-0000-00000000f00d', "
                    + String.join(", ", rowColumns.subList(1, rowColumns.size()).stream().map(column -> column.startsWith("chain_") ? "NULL" : column).toList())
                    + " FROM load_rows WHERE load_id = '" + loadOf(loads, "d-insert", 3) + "'");
            // A load's context (its site, stored once for every load there: docs/adr/0013) pointed elsewhere.
            s.executeUpdate("INSERT INTO load_sites (site_key, cluster, host, platform_name, profile_name) VALUES (42, 'test', 'elsewhere', "
                    + "'jvm', 'default')");
            s.executeUpdate("UPDATE load_rows SET site_key = 42 WHERE load_id = '" + loadOf(loads, "d-site", 2) + "'");
            // A rewrite of rows and hashes together, as someone who knows the scheme would do it.
            setTensor(s, db.kind(), loadOf(loads, "d-rewrite", 1), 1, "memory_domain", "'MMAP_FILE'", "resident_bytes", "0");
            rehash(c, db.kind(), "d-rewrite");
        }

        ChainVerifier.Report databaseOnly;
        try (Connection c = db.dataSource().getConnection()) {
            databaseOnly = ChainVerifier.verify(c, Optional.empty(), Optional.empty());
        }
        assertThat(breaksOf(databaseOnly, "d-rewrite")).as("rows and hashes rewritten together hold up in the database alone").isEmpty();

        ChainLog.Published published = ChainLog.read(broker.clientConfig(), h.chain, h.group, Duration.ofSeconds(10));
        ChainVerifier.Report report;
        try (Connection c = db.dataSource().getConnection()) {
            report = ChainVerifier.verify(c, Optional.empty(), Optional.of(published));
        }
        // Releases 1 and 2 of d-update placed every tensor alike: one plan, which both name, so the changed row breaks both.
        assertThat(breaksOf(report, "d-update")).extracting(ChainVerifier.Break::seq).containsExactly(1L, 2L);
        assertThat(breaksOf(report, "d-update")).extracting(ChainVerifier.Break::loadId)
                .containsExactly(loadOf(loads, "d-update", 1), loadOf(loads, "d-update", 2));
        assertThat(breaksOf(report, "d-update")).allSatisfy(b -> assertThat(b.what()).contains("its plan differs from what was chained")
                .contains("5 tensors now of 5 tensors"));
        assertThat(breaksOf(report, "d-delete")).extracting(ChainVerifier.Break::what).anySatisfy(w -> assertThat(w).contains("entries 2 are missing"))
                .anySatisfy(w -> assertThat(w).contains("does not follow the entry before it"));
        assertThat(breaksOf(report, "d-delete")).allSatisfy(b -> assertThat(b.seq()).isEqualTo(3));
        assertThat(breaksOf(report, "d-reorder")).extracting(ChainVerifier.Break::what)
                .anySatisfy(w -> assertThat(w).contains("does not follow the entry before it"));
        assertThat(breaksOf(report, "d-reorder")).extracting(ChainVerifier.Break::loadId)
                .contains(loadOf(loads, "d-reorder", 2), loadOf(loads, "d-reorder", 3));
        assertThat(breaksOf(report, "d-reorder")).filteredOn(b -> b.seq() == 4).extracting(ChainVerifier.Break::what)
                .anySatisfy(w -> assertThat(w).isEqualTo("its load is chained already, at entry 1: an entry was copied"));
        assertThat(breaksOf(report, "d-insert")).singleElement().satisfies(b -> {
            assertThat(b.loadId()).isEqualTo("00000000-0000-0000-0000-00000000f00d");
            assertThat(b.what()).contains("a complete load that was never chained");
        });
        assertThat(breaksOf(report, "d-rewrite")).singleElement().satisfies(b -> assertThat(b.what())
                .contains("the store was rewritten, hashes and all, after publication"));
        assertThat(breaksOf(report, "d-site")).singleElement().satisfies(b -> {
            assertThat(b.loadId()).isEqualTo(loadOf(loads, "d-site", 2));
            assertThat(b.what()).contains("the load's row differs from what was chained");
        });
        assertThat(breaksOf(report, "d-clean")).isEmpty();

        // --full: the clean verify above left its marks, and these rows were changed behind them (IncrementalVerifyTest).
        CliRun broken = verify(settings, "--full");
        CliRun one = verify(settings, "--deployment", "d-clean", "--full");
        CliRun noLog = verify(settings, "--deployment", "d-rewrite", "--no-log");
        assertThat(broken.exit()).isEqualTo(1);
        assertThat(broken.out()).contains("BROKEN  d-update  entry 2  load " + loadOf(loads, "d-update", 2))
                .contains("BROKEN  d-update  entry 1  load " + loadOf(loads, "d-update", 1))
                .contains("BROKEN  d-insert  entry -  load 00000000-0000-0000-0000-00000000f00d")
                .contains("ok      d-clean  3 entries").contains("broken links in 6 deployments");
        assertThat(one.exit()).isZero();
        assertThat(one.out()).contains("1 deployments, 3 chained loads, checked against " + h.chain + ": every chain holds");
        assertThat(noLog.exit()).as("the database alone cannot tell").isZero();
        assertThat(noLog.out()).contains("database only (--no-log)");
    }

    /** Recomputes a deployment's chain over its rows as they now are: what a forger with database access would do. */
    /**
     * Sets columns (name, SQL value, ...) of one tensor of the plan a load names, where the store keeps it: its row in
     * {@code plan_tensors} on H2, its element of each column's array on PostgreSQL (V22).
     */
    private static void setTensor(Statement s, TestDatabase.Kind kind, String loadId, int tensor, String... columnsAndValues) throws SQLException {
        boolean arrays = kind == TestDatabase.Kind.POSTGRESQL;
        List<String> set = new ArrayList<>();
        for (int i = 0; i < columnsAndValues.length; i += 2) {
            set.add(columnsAndValues[i] + (arrays ? "[array_position(tensor_index, " + tensor + ")]" : "") + " = " + columnsAndValues[i + 1]);
        }
        assertThat(s.executeUpdate("UPDATE " + (arrays ? "plan_tensor_arrays" : "plan_tensors") + " SET " + String.join(", ", set)
                + " WHERE plan_digest = (SELECT plan_digest FROM loads WHERE load_id = '" + loadId + "')" + (arrays ? "" : " AND tensor_index = " + tensor)))
                .as("the tensor's row").isEqualTo(1);
    }

    private static void rehash(Connection c, TestDatabase.Kind kind, String deployment) throws SQLException {
        String prev = HashChain.GENESIS;
        for (HashChain.Entry e : HashChain.entries(c, deployment)) {
            // The plan's digest recomputed and renamed everywhere, then the load's hash over its new row.
            String plan;
            try (PreparedStatement q = c.prepareStatement("SELECT plan_digest FROM loads WHERE load_id = ?")) {
                q.setString(1, e.loadId());
                try (ResultSet rs = q.executeQuery()) {
                    rs.next();
                    plan = rs.getString(1);
                }
            }
            String decisionsHash = HashChain.plan(c, plan).hash();
            for (String table : List.of(kind == TestDatabase.Kind.POSTGRESQL ? "plan_tensor_arrays" : "plan_tensors", "plans")) {
                try (PreparedStatement u = c.prepareStatement("UPDATE " + table + " SET plan_digest = ? WHERE plan_digest = ?")) {
                    u.setString(1, decisionsHash);
                    u.setString(2, plan);
                    u.executeUpdate();
                }
            }
            // A load row keeps its plan's digest as bytes (V19).
            try (PreparedStatement u = c.prepareStatement("UPDATE load_rows SET plan_bytes = ? WHERE plan_bytes = ?")) {
                u.setBytes(1, StoredPlans.bytes(decisionsHash));
                u.setBytes(2, StoredPlans.bytes(plan));
                u.executeUpdate();
            }
            String loadHash = HashChain.loadHash(c, e.loadId(), e.encoding()).orElseThrow();
            String entryHash = HashChain.entryHash(prev, loadHash, decisionsHash);
            // What an entry stores, on its load's row: its own hash (the previous hash, the load's and the plan's are derived).
            try (PreparedStatement u = c.prepareStatement("UPDATE load_rows SET chain_hash = ? WHERE load_id = ?")) {
                u.setBytes(1, HashChain.bytes(entryHash));
                u.setString(2, e.loadId());
                assertThat(u.executeUpdate()).isEqualTo(1);
            }
            prev = entryHash;
        }
    }

    /** The columns of load_rows (what the loads view reads), load_id first. */
    private static List<String> rowColumns(Connection c) throws SQLException {
        List<String> columns = new ArrayList<>(List.of("load_id"));
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT * FROM load_rows WHERE 1 = 0")) {
            for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
                String column = rs.getMetaData().getColumnName(i).toLowerCase(Locale.ROOT);
                if (!column.equals("load_id")) {
                    columns.add(column);
                }
            }
        }
        return columns;
    }

    private static String loadOf(List<ModelLoaded> loads, String deployment, int release) {
        return loads.stream().filter(l -> l.getDeployment().getId().equals(deployment) && l.getRelease().equals("r" + release))
                .findFirst().orElseThrow().getLoadId().toString();
    }

    private static List<ChainVerifier.Break> breaksOf(ChainVerifier.Report report, String deployment) {
        return report.breaks().stream().filter(b -> b.deploymentId().equals(deployment)).toList();
    }

    private static CliRun verify(String[] settings, String... args) {
        return CliRun.run(settings, "verify", args);
    }
}
