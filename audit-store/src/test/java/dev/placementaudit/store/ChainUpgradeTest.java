package dev.placementaudit.store;

import db.migration.V23__runtime_in_a_loads_build;
import dev.placementaudit.events.ModelLoaded;
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
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

/**
 * A store whose chain entries were written to their own table (before V20) goes on chaining on the load rows after the
 * upgrade, from each chain's last entry: the old entries keep what they stored, the new ones follow them, and the
 * chain verifies in the database and against the heads published to the log before and after. The store is put back
 * as V19 left it, plans' tensors in rows (V22) included: its plans digest as they did after V22 moves them.
 */
@ExtendWith(KafkaBrokerExtension.class)
class ChainUpgradeTest {

    @DatabaseTest
    void aChainWrittenBeforeV20GoesOnOnTheLoadRows(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        List<ModelLoaded> before = List.of(StoreHarness.load("phone-1", "r1", 2, 0, false), StoreHarness.load("phone-1", "r2", 2, 24, false),
                StoreHarness.load("phone-2", "r1", 2, 1, false));
        h.publish(before);
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM chain_entries") == before.size());
        }
        // The store as V19 left it: the same entries, each with its load's hash, in a table of their own; no link on a
        // row, no head on a lock row; V20 not applied.
        try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
            for (String deployment : List.of("phone-1", "phone-2")) {
                for (HashChain.Entry e : HashChain.entries(c, deployment)) {
                    try (PreparedStatement insert = c.prepareStatement("INSERT INTO chain_entries_legacy (deployment_id, seq, load_id, load_hash, "
                            + "entry_hash, encoding) VALUES (?, ?, ?, ?, ?, 2)")) {
                        insert.setString(1, deployment);
                        insert.setLong(2, e.seq());
                        insert.setString(3, e.loadId());
                        insert.setBytes(4, HashChain.bytes(HashChain.loadHash(c, e.loadId(), 2).orElseThrow()));
                        insert.setBytes(5, HashChain.bytes(e.entryHash()));
                        insert.executeUpdate();
                    }
                }
            }
            // Nor V26: no index of the chain's positions (a column it covers goes next), nor of a deployment's loads by time.
            s.execute("DROP INDEX chain_by_deployment");
            s.execute("DROP INDEX loads_by_deployment_and_time");
            s.execute("DROP VIEW chain_entries");
            s.execute("ALTER TABLE chain_entries_legacy RENAME TO chain_entries");
            for (String column : List.of("chain_seq", "chain_hash")) {
                s.execute("ALTER TABLE load_rows DROP COLUMN " + column);
            }
            for (String column : List.of("chain_seq", "chain_hash", "chain_load_id")) {
                s.execute("ALTER TABLE deployment_locks DROP COLUMN " + column);
            }
            // A deployment whose lock row an older store never wrote (its chain began before V7).
            s.executeUpdate("DELETE FROM deployment_locks WHERE deployment_id = 'phone-2'");
            // And V21 not applied either (no incident yet: the table is empty).
            assertThat(h.count("SELECT COUNT(*) FROM incident_deployments")).isZero();
            boolean postgres = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
            // Nor V24: observations keyed by their load alone.
            s.execute(postgres ? "ALTER TABLE load_observations DROP CONSTRAINT load_observations_pkey" : "ALTER TABLE load_observations DROP PRIMARY KEY");
            s.execute("ALTER TABLE load_observations ADD PRIMARY KEY (load_id)");
            // Nor V23: no runtime in a load's build.
            s.execute("DROP VIEW load_tensors");
            s.execute("DROP VIEW loads");
            s.execute("ALTER TABLE load_builds DROP COLUMN runtime");
            s.execute(V23__runtime_in_a_loads_build.loadsView(postgres, false));
            s.execute("CREATE VIEW load_tensors AS SELECT l.load_id, l.resolver_version, l.policy_digest, t.* FROM loads l JOIN plan_tensors t "
                    + "ON t.plan_digest = l.plan_digest");
            for (String column : List.of("from_plan", "to_plan")) {
                s.execute(postgres ? "ALTER TABLE incident_deployments ALTER COLUMN " + column + " TYPE VARCHAR(64) USING encode(" + column + ", 'hex')"
                        : "ALTER TABLE incident_deployments ALTER COLUMN " + column + " SET DATA TYPE VARCHAR(64)");
            }
            // Nor V22: on PostgreSQL the plans' tensors back in a table, a row each (the upgrade then moves real plans into arrays).
            if (postgres) {
                s.execute("DROP VIEW load_tensors");
                s.execute("CREATE TABLE plan_tensors_v8 AS SELECT * FROM plan_tensors");
                s.execute("DROP VIEW plan_tensors");
                s.execute("DROP TABLE plan_tensor_arrays");
                s.execute("ALTER TABLE plan_tensors_v8 RENAME TO plan_tensors");
                s.execute("ALTER TABLE plan_tensors ADD PRIMARY KEY (plan_digest, tensor_index)");
                s.execute("CREATE VIEW load_tensors AS SELECT l.load_id, l.resolver_version, l.policy_digest, t.* FROM loads l JOIN plan_tensors t "
                        + "ON t.plan_digest = l.plan_digest");
            }
            // Nor V25: no verification marks.
            s.execute("DROP TABLE chain_verifications");
            // Nor V28: no totals on the incidents (V27, load_rows by month, finds the table partitioned already and does nothing).
            for (String column : List.of("showing_deployments", "affected_deployments", "affected_loads", "showing_bytes_moved", "showing_offheap_delta")) {
                s.execute("ALTER TABLE incidents DROP COLUMN " + column);
            }
            // Nor V29: no mark of each deployment's latest load of a model.
            s.execute("DROP INDEX latest_by_model_and_release");
            s.execute("ALTER TABLE load_rows DROP COLUMN is_latest");
            // Nor V30: no table of load ids (its upgrade fills it from the rows).
            s.execute("DROP TABLE load_ids");
            s.executeUpdate("DELETE FROM flyway_schema_history WHERE version IN ('20', '21', '22', '23', '24', '25', '26', '27', '28', '29', '30')");
        }

        List<ModelLoaded> after = List.of(StoreHarness.load("phone-1", "r3", 2, 48, true), StoreHarness.load("phone-2", "r2", 2, 25, false));
        h.publish(after);
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM chain_entries") == before.size() + after.size());
        }
        assertThat(h.count("SELECT COUNT(*) FROM chain_entries_legacy")).as("the old entries stay as they were written").isEqualTo(3);
        assertThat(h.count("SELECT COUNT(*) FROM load_rows WHERE chain_seq IS NOT NULL")).as("the new ones are on their rows").isEqualTo(2);
        try (Connection c = db.dataSource().getConnection()) {
            assertThat(HashChain.entries(c, "phone-1")).extracting(HashChain.Entry::seq, HashChain.Entry::loadId).containsExactly(
                    tuple(1L, before.get(0).getLoadId().toString()),
                    tuple(2L, before.get(1).getLoadId().toString()),
                    tuple(3L, after.get(0).getLoadId().toString()));
            assertThat(HashChain.entries(c, "phone-1").get(2).loadHash()).as("derived, not stored").isNull();
            assertThat(HashChain.heads(c)).extracting(head -> head.deploymentId() + " " + head.seq() + " " + head.loadId())
                    .containsExactly("phone-1 3 " + after.get(0).getLoadId(), "phone-2 2 " + after.get(1).getLoadId());
            ChainVerifier.Report report = ChainVerifier.verify(c, Optional.empty(),
                    Optional.of(ChainLog.read(broker.clientConfig(), h.chain, h.group, Duration.ofSeconds(10))));
            assertThat(report.breaks()).isEmpty();
            assertThat(report.entries()).isEqualTo(5);
            assertThat(report.chains()).allSatisfy(chain -> assertThat(chain.publishedHeadChecked()).isTrue());
        }
    }
}
