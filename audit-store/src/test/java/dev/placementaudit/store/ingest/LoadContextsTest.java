package dev.placementaudit.store.ingest;

import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.TestDatabase;
import org.flywaydb.core.Flyway;

import java.sql.Connection;
import java.sql.Statement;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static dev.placementaudit.store.ingest.MigratedDatabase.migrate;
import static dev.placementaudit.store.ingest.MigratedDatabase.rows;
import static dev.placementaudit.store.ingest.MigratedDatabase.transaction;
import static org.assertj.core.api.Assertions.assertThat;

/** Each load's site and build stored once under a key (V17): keys shared, collisions moved past, nothing remembered that rolled back. */
class LoadContextsTest {
    private static final List<String> PHONE = Arrays.asList("eu", "phone-1-host", "android", "edge");
    private static final List<String> DESKTOP = Arrays.asList("eu", "desk-1-host", "jvm", "desktop");

    @DatabaseTest
    void oneRowPerDistinctValueAndTheSameKeyForItInEveryBatch(TestDatabase db) throws Exception {
        migrate(db);
        LoadContexts contexts = new LoadContexts(dialect(db));
        Map<List<String>, Long> first;
        try (Connection c = transaction(db)) {
            first = contexts.keys(c, LoadContexts.SITES, List.of(PHONE, DESKTOP, PHONE));
            c.commit();
        }
        assertThat(first).containsOnlyKeys(PHONE, DESKTOP);
        assertThat(first.get(PHONE)).isEqualTo(LoadContexts.Dimension.digest(PHONE)).isNotEqualTo(first.get(DESKTOP));
        // Another writer (another instance, or this one after a restart) finds the same keys and writes nothing.
        try (Connection c = transaction(db)) {
            assertThat(new LoadContexts(dialect(db)).keys(c, LoadContexts.SITES, List.of(DESKTOP, PHONE))).isEqualTo(first);
            c.commit();
        }
        assertThat(rows(db, "SELECT host FROM load_sites ORDER BY host")).containsExactly("desk-1-host", "phone-1-host");
    }

    @DatabaseTest
    void aKeyHeldByOtherValuesMovesToTheNextFreeOne(TestDatabase db) throws Exception {
        migrate(db);
        long digest = LoadContexts.Dimension.digest(PHONE);
        // What a 64-bit collision would leave: the phone's key already names another site, and the next one a third.
        try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.executeUpdate("INSERT INTO load_sites (site_key, cluster, host, platform_name, profile_name) VALUES (" + digest
                    + ", 'us', 'other-host', 'jvm', 'desktop'), (" + (digest + 1) + ", 'us', 'third-host', 'jvm', 'desktop')");
        }
        Map<List<String>, Long> keys;
        try (Connection c = transaction(db)) {
            keys = new LoadContexts(dialect(db)).keys(c, LoadContexts.SITES, List.of(PHONE));
            c.commit();
        }
        assertThat(keys.get(PHONE)).isEqualTo(digest + 2);
        assertThat(rows(db, "SELECT host FROM load_sites WHERE site_key = " + (digest + 2))).containsExactly("phone-1-host");
        assertThat(rows(db, "SELECT host FROM load_sites WHERE site_key = " + digest)).containsExactly("other-host");
    }

    @DatabaseTest
    void aRowInsertedByATransactionThatRolledBackIsWrittenAgain(TestDatabase db) throws Exception {
        migrate(db);
        LoadContexts contexts = new LoadContexts(dialect(db));
        try (Connection c = transaction(db)) {
            contexts.keys(c, LoadContexts.BUILDS, List.of(Arrays.asList("Llama", null, "v1", "ab".repeat(32), null)));
            c.rollback();
            contexts.rolledBack();
        }
        assertThat(rows(db, "SELECT model_name FROM load_builds")).isEmpty();
        try (Connection c = transaction(db)) {
            Map<List<String>, Long> keys = contexts.keys(c, LoadContexts.BUILDS, List.of(Arrays.asList("Llama", null, "v1", "ab".repeat(32), null)));
            assertThat(keys).hasSize(1);
            c.commit();
            contexts.committed();
        }
        assertThat(rows(db, "SELECT model_name FROM load_builds WHERE model_sha256 IS NULL")).containsExactly("Llama");
    }

    @DatabaseTest
    void aStoreWrittenBeforeKeepsEveryLoadAndReleaseHeadAsItWas(TestDatabase db) throws Exception {
        Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").target("16").load().migrate();
        String columns = "load_id, deployment_id, cluster, host, release_name, model_id, model_name, model_sha256, platform_name, profile_name, "
                + "occurred_at, tensor_count, stored_bytes, resident_bytes, heap_bytes, offheap_bytes, mapped_bytes, heap_tensors, offheap_tensors, "
                + "mapped_tensors, resolver_version, policy_digest, resolved_at, complete, completed_at, summary_partition, summary_offset, "
                + "plan_digest, previous_load_id, previous_release, previous_plan_digest, source_offset";
        try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
            String[][] loads = {{"1", "phone-1", "phone-1-host", "android", "'" + "cd".repeat(32) + "'", "TRUE"},
                    {"2", "phone-1", "phone-1-host", "android", "NULL", "TRUE"}, {"3", "desk-1", "desk-1-host", "jvm", "'" + "cd".repeat(32) + "'", "FALSE"}};
            for (String[] l : loads) {
                s.executeUpdate("INSERT INTO loads (" + columns + ") VALUES ('00000000-0000-0000-0000-00000000000" + l[0] + "', '" + l[1]
                        + "', 'eu', '" + l[2] + "', 'r" + l[0] + "', 'm', 'Model M', " + l[4] + ", '" + l[3] + "', 'edge', "
                        + "TIMESTAMP WITH TIME ZONE '2026-01-01 00:00:00+00', 2, 20, 20, 4, 0, 16, 1, 0, 1, 'v1', '" + "ab".repeat(32)
                        + "', TIMESTAMP WITH TIME ZONE '2026-01-01 00:00:01+00', " + l[5] + ", NULL, 0, " + l[0] + ", '" + "ef".repeat(32)
                        + "', " + (l[0].equals("2") ? "'00000000-0000-0000-0000-000000000001', 'r1', '" + "ef".repeat(32) + "'" : "NULL, NULL, NULL")
                        + ", " + l[0] + ")");
            }
            // Each complete load its release's head, as the store kept them then (a table).
            s.executeUpdate("INSERT INTO release_heads (deployment_id, model_id, release_name, load_id, occurred_at, platform_name, profile_name, "
                    + "heap_bytes, offheap_bytes, mapped_bytes, plan_digest, regressions, summary_partition, summary_offset) SELECT deployment_id, "
                    + "model_id, release_name, load_id, occurred_at, platform_name, profile_name, heap_bytes, offheap_bytes, mapped_bytes, plan_digest, "
                    + "0, summary_partition, summary_offset FROM loads WHERE complete = TRUE");
        }
        String heads = "SELECT deployment_id || '|' || model_id || '|' || release_name || '|' || load_id || '|' || occurred_at || '|' || platform_name "
                + "|| '|' || profile_name || '|' || heap_bytes || '|' || offheap_bytes || '|' || mapped_bytes || '|' || plan_digest || '|' || regressions "
                + "|| '|' || summary_partition || '|' || summary_offset FROM release_heads ORDER BY load_id";
        List<String> headsBefore = rows(db, heads);
        // Every column as text, a NULL as '~' (a NULL would make the whole concatenation NULL).
        String row = Arrays.stream(columns.split(", ")).map(column -> "COALESCE(CAST(" + column + " AS VARCHAR(300)), '~')")
                .collect(Collectors.joining(" || '|' || "));
        List<String> before = rows(db, "SELECT " + row + " FROM loads ORDER BY load_id");
        assertThat(before).allMatch(r -> r != null && r.contains("|~|")).hasSize(3);
        List<String> withNulls = rows(db, "SELECT load_id FROM loads WHERE model_sha256 IS NULL");
        migrate(db);

        assertThat(rows(db, "SELECT " + row + " FROM loads ORDER BY load_id")).isEqualTo(before);
        assertThat(rows(db, "SELECT load_id FROM loads WHERE model_sha256 IS NULL")).isEqualTo(withNulls).hasSize(1);
        // Its release heads, now marks on their loads' rows (V18), read as they were.
        assertThat(rows(db, heads)).isEqualTo(headsBefore).hasSize(2);
        assertThat(rows(db, "SELECT load_id FROM load_rows WHERE is_head = TRUE ORDER BY load_id")).hasSize(2);
        assertThat(rows(db, "SELECT host FROM load_sites ORDER BY host")).containsExactly("desk-1-host", "phone-1-host");
        assertThat(rows(db, "SELECT COUNT(*) FROM load_builds")).containsExactly("2");
        // And the store writes loads after it: a new load of a site stored by the migration takes its key.
        try (Connection c = transaction(db)) {
            assertThat(new LoadContexts(dialect(db)).keys(c, LoadContexts.SITES, List.of(Arrays.asList("eu", "phone-1-host", "android", "edge"))).values())
                    .containsExactly(Long.valueOf(rows(db, "SELECT site_key FROM load_rows WHERE load_id LIKE '%1'").get(0)));
            c.commit();
        }
        assertThat(rows(db, "SELECT COUNT(*) FROM load_sites")).containsExactly("2");
    }

    private static Dialect dialect(TestDatabase db) {
        return Dialect.of(db.jdbcUrl());
    }

    /** A build's runtime came later (V23): null leaves the key of a build as it was, a runtime makes a build of its own. */
    @DatabaseTest
    void aBuildsRuntimeKeepsTheKeysOfBuildsStoredBeforeAndMakesABuildOfItsOwn(TestDatabase db) throws Exception {
        migrate(db);
        List<String> before = Arrays.asList("Llama", "cd".repeat(32), "v1", "ab".repeat(32));
        List<String> skainet = Arrays.asList("Llama", "cd".repeat(32), "v1", "ab".repeat(32), null);
        List<String> llama = Arrays.asList("Llama", "cd".repeat(32), "v1", "ab".repeat(32), "llama.cpp b4916 AARCH64_REPACK,AVX2 mmap");
        assertThat(LoadContexts.Dimension.digest(skainet)).isEqualTo(LoadContexts.Dimension.digest(before));
        LoadContexts contexts = new LoadContexts(dialect(db));
        try (Connection c = transaction(db)) {
            Map<List<String>, Long> keys = contexts.keys(c, LoadContexts.BUILDS, List.of(skainet, llama));
            assertThat(keys.get(skainet)).isNotEqualTo(keys.get(llama));
            c.commit();
            contexts.committed();
        }
        assertThat(rows(db, "SELECT runtime FROM load_builds WHERE runtime IS NOT NULL")).containsExactly("llama.cpp b4916 AARCH64_REPACK,AVX2 mmap");
    }
}
