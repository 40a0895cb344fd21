package dev.placementaudit.store;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.resolution.ResolvedLoad;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.replay.ProjectionRebuild;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.testkit.TopicReader;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A load id stands for one load (issue 56): another load under a stored id (the simulator's seed reused, a device that
 * makes up ids) is dead-lettered as a conflict, decisions and summary, counted, shown by {@code where --load} and warned
 * of on {@code /health}; the first load stays as it was, and the same load sent again stays a silent no-op. A rebuild
 * from the log sets aside the same records.
 */
@ExtendWith(KafkaBrokerExtension.class)
class LoadIdConflictTest {

    @DatabaseTest
    void anotherLoadUnderAStoredIdIsDeadLetteredAndTheFirstStaysAsItWas(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        Map<String, String> settings = h.settings();
        settings.put("store.alerts.per.load", "false");
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        ModelLoaded first = StoreHarness.load("edge-7", "r1", 2, 0, false);
        // Another deployment's load, another release and shape, under the same id; then the same load sent again.
        ModelLoaded impostor = ModelLoaded.newBuilder(StoreHarness.load("edge-9", "r2", 3, 5, true)).setLoadId(first.getLoadId()).build();
        String loadId = first.getLoadId().toString();
        try (AuditStore store = h.start(settings, registry)) {
            List<ResolvedLoad> stored = h.publishAndWait(List.of(first));
            String before = planOf(h, loadId);
            List<ResolvedLoad> conflicting = h.publish(List.of(impostor, first));
            int impostorRecords = conflicting.get(0).decisions().size() + 1;
            // The load after them completes: nothing the conflict left behind holds its deployment up.
            h.publishAndWait(List.of(StoreHarness.load("edge-7", "r2", 2, 10, false)));

            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM dead_letters WHERE detail = 'LOAD_ID_CONFLICT'")
                    == impostorRecords);
            assertThat(h.count("SELECT COUNT(*) FROM dead_letters")).as("the same load again is no conflict").isEqualTo(impostorRecords);
            assertThat(h.count("SELECT COUNT(*) FROM dead_letters WHERE reason = 'INVALID_CONTENT' AND load_id = '" + loadId + "'"))
                    .isEqualTo(impostorRecords);
            assertThat(h.count("SELECT COUNT(*) FROM loads WHERE load_id = '" + loadId + "' AND deployment_id = 'edge-7' AND release_name = 'r1' "
                    + "AND complete = TRUE")).as("the first load, as it was").isEqualTo(1);
            assertThat(planOf(h, loadId)).isEqualTo(before);
            assertThat(h.count("SELECT COUNT(*) FROM decisions")).as("no decision of the impostor staged under the id").isZero();
            assertThat(h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE")).isEqualTo(2);
            assertThat(h.count("SELECT COUNT(*) FROM loads WHERE deployment_id = 'edge-9'")).isZero();
            assertThat(stored.get(0).summary().getLoadId()).isEqualTo(first.getLoadId());

            var letters = TopicReader.readCommitted(broker, h.decisions + ".dlq", impostorRecords);
            assertThat(letters).hasSize(impostorRecords).allSatisfy(letter -> {
                assertThat(header(letter, DeadLetter.DETAIL)).isEqualTo("LOAD_ID_CONFLICT");
                assertThat(header(letter, DeadLetter.ERROR)).contains("deployment edge-9, not edge-7").contains("release r2, not r1")
                        .contains("than the load stored under it");
            });
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(registry.scrape())
                    .contains("pa_store_dlq_total{reason=\"INVALID_CONTENT\"} " + impostorRecords + ".0"));
            assertThat(store.health().up()).as("a conflict is a warning, not an outage").isTrue();
            assertThat(store.health().details().get("warnings")).asString().contains(impostorRecords + " record(s) came under a load id")
                    .contains(loadId);

            CliRun where = CliRun.run(CliRun.settings(h), "where", "--load", loadId);
            assertThat(where.exit()).isZero();
            assertThat(where.out()).as(where.out()).contains("edge-7 r1")
                    .contains("warning: " + impostorRecords + " record(s) set aside as LOAD_ID_CONFLICT").contains(h.decisions + "-")
                    .contains("deployment edge-9, not edge-7");
            CliRun listed = CliRun.run(CliRun.settings(h), "where", "--deployment", "edge-7");
            assertThat(listed.out()).as("set aside, not missing from the load: " + listed.out()).contains(loadId).doesNotContain("dlq:");
        }
        StringWriter out = new StringWriter();
        ProjectionRebuild.Result rebuilt = new ProjectionRebuild(StoreConfig.from(Settings.of(h.settings())), new PrintWriter(out, true))
                .run(Long.MAX_VALUE, false, false);
        assertThat(rebuilt.equal()).as("%s%n%s", rebuilt.live(), rebuilt.rebuilt()).isTrue();
    }

    /**
     * Two store instances meet one id with other content at the same moment, each in its own transaction under its own
     * deployment's lock, the two loads in different months (on PostgreSQL, different partitions of load_rows, whose key
     * holds the time): the id is stored once all the same (load_ids, V30), the other load is dead-lettered as a conflict,
     * and nothing is left half-written.
     */
    @org.junit.jupiter.api.Test
    void twoInstancesMeetingOneIdAtOnceStoreItOnce(KafkaBroker broker) throws Exception {
        int pairs = 30;
        try (TestDatabase db = dev.placementaudit.testkit.PostgresServer.fromEnvironment().createIsolatedSchema()) {
            StoreHarness h = new StoreHarness(broker, db);
            Map<String, String> settings = h.settings();
            settings.put("store.alerts.per.load", "false");
            settings.put("store.max.poll.records", "5");
            settings.put("kafka.partition.assignment.strategy", "org.apache.kafka.clients.consumer.RoundRobinAssignor");
            List<ModelLoaded> loads = new java.util.ArrayList<>();
            for (int i = 0; i < pairs; i++) {
                ModelLoaded first = StoreHarness.load("east-" + i, "r1", 2, i, false);
                // Forty days later: another month, so another partition.
                loads.add(first);
                loads.add(ModelLoaded.newBuilder(StoreHarness.load("west-" + i, "r1", 2, 24 * 40 + i, false)).setLoadId(first.getLoadId()).build());
            }
            Map<String, String> a = new java.util.HashMap<>(settings);
            a.put("store.instance.id", h.group + "-a");
            Map<String, String> b = new java.util.HashMap<>(settings);
            b.put("store.instance.id", h.group + "-b");
            try (AuditStore one = h.start(a); AuditStore two = h.start(b)) {
                int recordsPerLoad = h.publish(loads).get(0).decisions().size() + 1;
                await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(500)).until(() ->
                        h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == pairs
                                && h.count("SELECT COUNT(*) FROM dead_letters WHERE detail = 'LOAD_ID_CONFLICT' AND reason = 'INVALID_CONTENT' "
                                + "AND source_topic = '" + h.resolved + "'") == pairs);
                assertThat(h.count("SELECT COUNT(*) FROM load_rows")).as("each id stored once").isEqualTo(pairs);
                assertThat(h.count("SELECT COUNT(*) FROM (SELECT load_id FROM load_rows GROUP BY load_id HAVING COUNT(*) > 1) x")).isZero();
                // Of the other load's decisions, those checked after the first load was stored are set aside too; one staged at
                // the same moment as the first load's decision of the same tensor is taken as that decision sent again.
                assertThat(h.count("SELECT COUNT(*) FROM dead_letters WHERE detail = 'LOAD_ID_CONFLICT'")).isBetween((long) pairs,
                        (long) pairs * recordsPerLoad);
                assertThat(h.count("SELECT COUNT(*) FROM decisions")).as("nothing left staged").isZero();
                StoreHarness.assertReleaseHeads(h);
            }
        }
    }

    /**
     * The moment itself, made to happen: another instance's transaction stores a load under an id (another deployment,
     * another month) while this store's batch writing that id waits on it. When it commits, the batch's write fails on
     * the id (load_ids, V30); the store checks the batch again instead of retrying it as it was (which would fail the
     * same way forever), sets the load aside as a conflict, and goes on.
     */
    @org.junit.jupiter.api.Test
    void aBatchThatMeetsAnIdStoredMeanwhileIsCheckedAgainNotRetriedForever(KafkaBroker broker) throws Exception {
        try (TestDatabase db = dev.placementaudit.testkit.PostgresServer.fromEnvironment().createIsolatedSchema()) {
            StoreHarness h = new StoreHarness(broker, db);
            Map<String, String> settings = h.settings();
            settings.put("store.alerts.per.load", "false");
            try (AuditStore store = h.start(settings)) {
                ModelLoaded model = StoreHarness.load("west-1", "r1", 2, 0, false);
                h.publishAndWait(List.of(model));
                ModelLoaded load = StoreHarness.load("east-1", "r1", 2, 1, false);
                String id = load.getLoadId().toString();
                try (java.sql.Connection other = db.connect()) {
                    other.setAutoCommit(false);
                    // The other instance's load: the stored one's row under this id, forty days later.
                    List<String> columns = columns(other);
                    Map<String, String> replaced = Map.of("load_id", "'" + id + "'", "occurred_at", "TIMESTAMP WITH TIME ZONE '2026-12-11 00:00:00+00'",
                            "is_head", "FALSE", "is_latest", "FALSE", "chain_seq", "NULL", "chain_hash", "NULL");
                    try (java.sql.Statement s = other.createStatement()) {
                        s.executeUpdate("INSERT INTO load_ids (load_id, occurred_at) VALUES ('" + id + "', TIMESTAMP WITH TIME ZONE '2026-12-11 00:00:00+00')");
                        s.executeUpdate("INSERT INTO load_rows (" + String.join(", ", columns) + ") SELECT " + String.join(", ", columns.stream()
                                .map(column -> replaced.getOrDefault(column, column)).toList()) + " FROM load_rows WHERE load_id = '" + model.getLoadId() + "'");
                    }
                    h.publish(List.of(load));
                    await().atMost(Duration.ofSeconds(30)).until(() -> h.count("SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                            + "AND query LIKE 'INSERT INTO load_ids%'") > 0);
                    other.commit();

                    // Its summary, in the batch that waited (its decisions, checked before the other load was there, are the
                    // decisions staged at the same moment of the test above).
                    await().atMost(Duration.ofSeconds(30)).until(() -> h.count("SELECT COUNT(*) FROM dead_letters WHERE detail = 'LOAD_ID_CONFLICT' "
                            + "AND load_id = '" + id + "' AND source_topic = '" + h.resolved + "'") == 1);
                }
                assertThat(h.count("SELECT COUNT(*) FROM load_rows WHERE load_id = '" + id + "'")).as("the id stored once").isOne();
                assertThat(h.count("SELECT COUNT(*) FROM loads WHERE deployment_id = 'east-1'")).isZero();
                assertThat(h.count("SELECT COUNT(*) FROM decisions")).isZero();
                h.publishAndWait(List.of(StoreHarness.load("east-1", "r2", 2, 2, false)));
                assertThat(store.health().up()).isTrue();
            }
        }
    }

    private static List<String> columns(java.sql.Connection c) throws java.sql.SQLException {
        List<String> columns = new java.util.ArrayList<>();
        try (java.sql.ResultSet rs = c.getMetaData().getColumns(null, c.getSchema(), "load_rows", null)) {
            while (rs.next()) {
                columns.add(rs.getString("COLUMN_NAME"));
            }
        }
        return columns;
    }

    private static String planOf(StoreHarness h, String loadId) throws Exception {
        return h.string("SELECT plan_digest FROM loads WHERE load_id = '" + loadId + "'");
    }

    private static String header(org.apache.kafka.clients.consumer.ConsumerRecord<byte[], byte[]> record, String name) {
        var header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }
}
