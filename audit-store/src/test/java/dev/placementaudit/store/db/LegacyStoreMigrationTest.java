package dev.placementaudit.store.db;

import dev.placementaudit.schemas.PlanDigest;
import dev.placementaudit.store.chain.ChainVerifier;
import dev.placementaudit.store.chain.HashChain;
import dev.placementaudit.store.query.AuditQueries;
import dev.placementaudit.store.query.LoadQueries;
import dev.placementaudit.store.regression.GrowthRule;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.TestDatabase;
import org.flywaydb.core.Flyway;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A store written before placement plans (schema V7) opened by this version: every completed load gets the plan its
 * decision rows make, queries read it, and chain entries written over decision rows still verify.
 */
class LegacyStoreMigrationTest {
    private static final String CHAINED = "00000000-0000-0000-0000-000000000001";
    private static final String UNCHAINED = "00000000-0000-0000-0000-000000000002";
    private static final String PENDING = "00000000-0000-0000-0000-000000000003";

    @DatabaseTest
    void loadsStoredBeforePlansGetTheirPlansAndTheirChainStillHolds(TestDatabase db) throws Exception {
        Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").target("7").load().migrate();
        try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
            for (String load : List.of(CHAINED, UNCHAINED, PENDING)) {
                boolean complete = !load.equals(PENDING);
                s.executeUpdate("INSERT INTO loads (load_id, deployment_id, cluster, host, release_name, model_id, model_name, platform_name, "
                        + "profile_name, occurred_at, tensor_count, stored_bytes, resident_bytes, heap_bytes, offheap_bytes, mapped_bytes, heap_tensors, "
                        + "offheap_tensors, mapped_tensors, resolver_version, policy_digest, resolved_at, complete, summary_partition, summary_offset) "
                        + "VALUES ('" + load + "', 'edge-1', 'eu', 'h1', 'r1', 'm', 'model', 'jvm', 'default', TIMESTAMP WITH TIME ZONE "
                        + "'2026-01-01 00:00:00+00', 2, 20, 20, 4, 0, 16, 1, 0, 1, 'v1', '" + "ab".repeat(32) + "', TIMESTAMP WITH TIME ZONE "
                        + "'2026-01-01 00:00:01+00', " + complete + ", 0, " + load.charAt(load.length() - 1) + ")");
                for (int i = 0; i < (complete ? 2 : 1); i++) {
                    s.executeUpdate("INSERT INTO decisions (decision_id, load_id, tensor_name, tensor_index, dtype, stored_encoding, stored_format, "
                            + "element_count, stored_bytes, resident_format, resident_bytes, memory_domain, scope_kind, mapping_requested, reason_code, "
                            + "placement_reason, mapping_blockers, reason, resolver_version, policy_digest, source_partition, source_offset) VALUES ('"
                            + load.substring(0, 34) + load.charAt(35) + i + "', '" + load + "', 't" + i + "', " + i + ", 'F32', 'dense', 'F32', " + (i + 1) * 2 + ", "
                            + (i == 0 ? 4 : 16) + ", 'F32', " + (i == 0 ? 4 : 16) + ", '" + (i == 0 ? "HOST_HEAP" : "MMAP_FILE") + "', 'GLOBAL', "
                            + (i == 1) + ", 'BELOW_THRESHOLD', 'BELOW_THRESHOLD', '', 't" + i + ": why', 'v1', '" + "ab".repeat(32) + "', 0, " + i + ")");
                }
            }
            // A finding as stored per load before plans: the unchained load compared with the chained one.
            s.executeUpdate("INSERT INTO findings (finding_id, load_id, previous_load_id, deployment_id, model_id, from_release, to_release, kind, "
                    + "tensor_name, before_domain, after_domain, before_bytes, after_bytes, detected_at) VALUES ('f1', '" + UNCHAINED + "', '"
                    + CHAINED + "', 'edge-1', 'm', 'r0', 'r1', 'LOST_MAPPING', 't1', 'MMAP_FILE', 'HOST_HEAP', 16, 16, CURRENT_TIMESTAMP)");
            // An entry over the decision rows, as the store wrote them before plans (encoding 1).
            String loadHash = HashChain.loadHash(c, CHAINED, 1).orElseThrow();
            String decisionsHash = HashChain.decisionsHash(c, CHAINED);
            s.executeUpdate("INSERT INTO chain_entries (deployment_id, seq, load_id, prev_hash, load_hash, decisions_hash, entry_hash) VALUES "
                    + "('edge-1', 1, '" + CHAINED + "', '" + HashChain.GENESIS + "', '" + loadHash + "', '" + decisionsHash + "', '"
                    + HashChain.entryHash(HashChain.GENESIS, loadHash, decisionsHash) + "')");
        }

        try (AuditDatabase store = AuditDatabase.open(db.jdbcUrl(), db.user(), db.password(), null, 2);
             Connection c = store.dataSource().getConnection()) {
            String plan = new PlanDigest()
                    .tensor(0, "t0", "F32", "dense", "F32", 2L, 4L, false, "F32", 4L, "HOST_HEAP", "GLOBAL", false, "BELOW_THRESHOLD",
                            "BELOW_THRESHOLD", "", "t0: why")
                    .tensor(1, "t1", "F32", "dense", "F32", 4L, 16L, false, "F32", 16L, "MMAP_FILE", "GLOBAL", true, "BELOW_THRESHOLD",
                            "BELOW_THRESHOLD", "", "t1: why").digest();
            assertThat(strings(c, "SELECT plan_digest FROM loads WHERE complete = TRUE ORDER BY load_id")).containsExactly(plan, plan);
            assertThat(strings(c, "SELECT plan_digest FROM plans")).containsExactly(plan);
            assertThat(strings(c, "SELECT tensor_name FROM plan_tensors ORDER BY tensor_index")).containsExactly("t0", "t1");
            // The chained load keeps the rows its entry covers; the unchained one's went into the plan; the pending one waits.
            assertThat(strings(c, "SELECT DISTINCT load_id FROM decisions ORDER BY load_id")).containsExactly(CHAINED, PENDING);

            // The finding is now the pair of plans', shown per load as before.
            assertThat(strings(c, "SELECT load_id || ' ' || previous_load_id || ' ' || from_release || ' ' || kind || ' ' || tensor_name "
                    + "FROM findings")).containsExactly(UNCHAINED + " " + CHAINED + " r0 LOST_MAPPING t1");
            assertThat(strings(c, "SELECT from_plan || '>' || to_plan FROM plan_findings")).containsExactly(plan + ">" + plan);

            AuditQueries queries = new AuditQueries(store.dataSource(), new GrowthRule("off-heap", 10, 1 << 20), new GrowthRule("heap", 10, 1 << 20));
            // The release's head (the later load) counts its comparison's regression (V12), as the fleet view shows it.
            assertThat(strings(c, "SELECT load_id || ' ' || CAST(regressions AS VARCHAR(10)) FROM release_heads")).containsExactly(UNCHAINED + " 1");
            assertThat(queries.fleet("r1").withRegressions()).containsExactly("edge-1");
            LoadQueries.LoadDetail detail = queries.load(UNCHAINED).orElseThrow();
            assertThat(detail.tensors()).extracting(LoadQueries.TensorRow::domain).containsExactly("HOST_HEAP", "MMAP_FILE");
            assertThat(detail.load().planDigest()).isEqualTo(plan);

            // The entry's hashes are now stored as bytes (V11), and still the ones it was written with.
            assertThat(HashChain.entries(c, "edge-1")).singleElement().satisfies(e -> {
                assertThat(e.prevHash()).isEqualTo(HashChain.GENESIS);
                assertThat(e.entryHash()).isEqualTo(HashChain.entryHash(e.prevHash(), e.loadHash(), e.decisionsHash()));
            });
            ChainVerifier.Report report = ChainVerifier.verify(c, Optional.of("edge-1"), Optional.empty());
            // The unchained load is reported as before plans: stored before the chain existed.
            assertThat(report.breaks()).singleElement().satisfies(b -> assertThat(b.loadId()).isEqualTo(UNCHAINED));
            try (Statement s = c.createStatement()) {
                s.executeUpdate("UPDATE decisions SET memory_domain = 'HOST_HEAP' WHERE load_id = '" + CHAINED + "' AND tensor_index = 1");
            }
            assertThat(ChainVerifier.verify(c, Optional.of("edge-1"), Optional.empty()).breaks())
                    .anySatisfy(b -> assertThat(b.what()).contains("its decisions differ from what was chained"));
        }
    }

    private static List<String> strings(Connection c, String sql) throws Exception {
        List<String> values = new java.util.ArrayList<>();
        try (PreparedStatement s = c.prepareStatement(sql); ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
                values.add(rs.getString(1));
            }
        }
        return values;
    }
}
