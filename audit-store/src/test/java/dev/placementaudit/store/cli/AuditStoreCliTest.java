package dev.placementaudit.store.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.store.AuditStore;
import dev.placementaudit.store.StoreHarnessAccess;
import dev.placementaudit.store.query.LoadQueries;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.extension.ExtendWith;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

@ExtendWith(KafkaBrokerExtension.class)
class AuditStoreCliTest {

    @DatabaseTest
    void queriesTheStoreAsTablesAndJsonAndRecordsBudgets(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarnessAccess h = new StoreHarnessAccess(broker, db);
        ModelLoaded r1 = StoreHarnessAccess.load("phone-1", "r1", 2, 0, false);
        ModelLoaded r2 = StoreHarnessAccess.load("phone-1", "r2", 2, 24, true);
        h.publish(List.of(r1, r2));
        try (AuditStore store = h.start(h.settings())) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 2);
        }
        String[] jdbc = {"--set", "store.jdbc.url=" + db.jdbcUrl(), "--set", "store.jdbc.user=" + db.user(),
                "--set", "store.rules.offheap.bytes=1048576"};

        Run where = run(jdbc, "where", "--deployment", "phone-1");
        Run one = run(jdbc, "where", "--load", r2.getLoadId().toString());
        Run diff = run(jdbc, "diff", "--deployment", "phone-1", "--model", "sample-model", "--from", "r1", "--to", "r2");
        Run diffJson = run(jdbc, "diff", "--deployment", "phone-1", "--model", "sample-model", "--from", "r1", "--to", "r2", "--format", "json");
        Run diffFindings = run(jdbc, "diff", "--deployment", "phone-1", "--model", "sample-model", "--from", "r1", "--to", "r2", "--findings");
        Run fleet = run(jdbc, "fleet", "--release", "r2");
        Run alerts = run(jdbc, "alerts");
        Run budget = run(jdbc, "budget", "--deployment", "phone-1", "--release", "r3", "--max-delta-bytes", "1073741824", "--note", "PLAT-7");
        Run missing = run(jdbc, "diff", "--deployment", "phone-1", "--model", "sample-model", "--from", "r1", "--to", "r9");

        assertThat(where.out).contains("phone-1").contains("r1").contains("r2").contains("8 MB");
        assertThat(one.out).contains("blk.0.attn_q.weight").contains("HOST_OFFHEAP").contains("REENCODED_AT_LOAD");
        assertThat(diff.out).contains("LOST_MAPPING").contains("OFFHEAP_GROWTH").contains("1 root causes, largest first:")
                .contains("1. 2 tensors re-encoded at load (Float32/Q4_K -> Float32/Dense(4B)): lost mapping, +8 MB off-heap")
                .contains("reason MAPPED_OK -> REENCODED_AT_LOAD").doesNotContain("mapped read-only");
        assertThat(diffFindings.out).contains("mapped read-only").contains("re-encoded at load");
        JsonNode causes = new ObjectMapper().readTree(diffJson.out).get("causes");
        assertThat(causes).hasSize(1);
        assertThat(causes.get(0).get("tensorCount").asInt()).isEqualTo(2);
        assertThat(causes.get(0).get("tensors")).hasSize(2);
        assertThat(causes.get(0).get("deltaBytesByDomain").get("HOST_OFFHEAP").asLong()).isPositive();
        JsonNode report = new ObjectMapper().readTree(diffJson.out);
        assertThat(report.get("countsByKind").get("LOST_MAPPING").asInt()).isEqualTo(2);
        assertThat(fleet.out).contains("release r2: 1 deployments").contains("with regressions: [phone-1]");
        assertThat(alerts.out).contains("OFFHEAP_GROWTH").contains("LOST_MAPPING").contains("phone-1          sample-model r1 -> r2")
                .contains("    loads " + r1.getLoadId() + " -> " + r2.getLoadId())
                .contains("    why: 2 tensors re-encoded at load (Float32/Q4_K -> Float32/Dense(4B)): lost mapping")
                .contains("    top: blk.0.attn_q.weight mapped 576 KB -> off-heap 4 MB");
        JsonNode alertsJson = new ObjectMapper().readTree(run(jdbc, "alerts", "--format", "json").out);
        assertThat(alertsJson).allSatisfy(a -> {
            assertThat(a.get("topTensors").isArray()).as("typed, not JSON in a string").isTrue();
            assertThat(a.get("topTensors")).isNotEmpty();
            assertThat(a.get("causes")).isNotEmpty();
            assertThat(a.get("fromLoadId").asText()).isEqualTo(r1.getLoadId().toString());
        });
        assertThat(budget.out).contains("OFFHEAP_GROWTH on phone-1 r3: budget 1.0 GB (PLAT-7)");
        assertThat(h.count("SELECT COUNT(*) FROM growth_budgets")).isEqualTo(1);
        assertThat(missing.exit).isEqualTo(2);
        assertThat(missing.err).contains("no complete load of sample-model on phone-1 for r1 and r9");
    }

    @DatabaseTest
    void rebuildWithFormatJsonPrintsOnlyItsResultOnStdoutAndItsProgressOnStderr(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarnessAccess h = new StoreHarnessAccess(broker, db);
        h.publish(List.of(StoreHarnessAccess.load("phone-1", "r1", 2, 0, false), StoreHarnessAccess.load("phone-1", "r2", 2, 24, true)));
        try (AuditStore store = h.start(h.settings())) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 2);
        }
        List<String> settings = new ArrayList<>();
        h.settings().forEach((key, value) -> {
            settings.add("--set");
            settings.add(key + "=" + value);
        });

        Run rebuild = run(settings.toArray(String[]::new), "rebuild", "--format", "json");

        assertThat(rebuild.exit).as(rebuild.err).isZero();
        JsonNode result = new ObjectMapper().readTree(rebuild.out);
        assertThat(result.get("equal").asBoolean()).isTrue();
        assertThat(result.get("records").asLong()).isPositive();
        assertThat(rebuild.err).contains("rebuilding").contains("rebuilt projection equals the live one");
    }

    @DatabaseTest
    void aQueryOfAStoreThatWasNeverStartedSaysSoAndCreatesNothing(TestDatabase db) throws Exception {
        db.dataSource().getConnection().close(); // the database exists (an H2 file is created on first connection); the projection does not
        Run where = run(new String[]{"--set", "store.jdbc.url=" + db.jdbcUrl(), "--set", "store.jdbc.user=" + db.user()}, "where");

        assertThat(where.exit).isEqualTo(2);
        assertThat(where.err).startsWith("error: no audit projection in the store at ").contains("table 'loads' is missing");
        try (var c = db.dataSource().getConnection(); var tables = c.getMetaData().getTables(null, null, "%", new String[]{"TABLE"})) {
            List<String> created = new ArrayList<>();
            while (tables.next()) {
                if (db.schema() == null || db.schema().equalsIgnoreCase(tables.getString("TABLE_SCHEM"))) {
                    created.add(tables.getString("TABLE_NAME"));
                }
            }
            assertThat(created).as("tables the query created").isEmpty();
        }
    }

    @DatabaseTest
    void whereSaysWhichTensorsHaveAnEstimatedSize(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarnessAccess h = new StoreHarnessAccess(broker, db);
        ModelLoaded sample = StoreHarnessAccess.load("phone-1", "r1", 2, 0, false);
        List<TensorInfo> tensors = new ArrayList<>(sample.getTensors());
        tensors.set(2, TensorInfo.newBuilder(tensors.get(2)).setEncoding("Opaque:GGML_TYPE_39").setSizeEstimated(true).build());
        ModelLoaded load = ModelLoaded.newBuilder(sample).setTensors(tensors).build();
        h.publish(List.of(load));
        try (AuditStore store = h.start(h.settings())) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 1);
        }

        Run where = run(new String[]{"--set", "store.jdbc.url=" + db.jdbcUrl(), "--set", "store.jdbc.user=" + db.user()},
                "where", "--load", load.getLoadId().toString());
        Run json = run(new String[]{"--set", "store.jdbc.url=" + db.jdbcUrl(), "--set", "store.jdbc.user=" + db.user()},
                "where", "--load", load.getLoadId().toString(), "--format", "json");

        assertThat(where.exit).as(where.err).isZero();
        assertThat(where.out.lines().filter(l -> l.contains("size estimated (unknown type)")))
                .singleElement().asString().contains("blk.1.attn_q.weight");
        assertThat(where.out).contains("1 of 4 tensors have an estimated size: the producer did not know their type");
        JsonNode rows = new ObjectMapper().readTree(json.out).get("tensors");
        assertThat(rows).hasSize(4);
        assertThat(rows.get(2).get("sizeEstimated").asBoolean()).isTrue();
        assertThat(rows.get(1).get("sizeEstimated").asBoolean()).isFalse();
    }

    private record Run(int exit, String out, String err) {
    }

    private static Run run(String[] common, String command, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = AuditStoreCli.commandLine(null);
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        List<String> all = new ArrayList<>();
        all.add(command);
        all.addAll(List.of(common));
        all.addAll(List.of(args));
        int exit = cli.execute(all.toArray(String[]::new));
        return new Run(exit, out.toString(), err.toString());
    }

    /** A complete load that had records dead-lettered says so in the where table, as the API's deadLetteredRecords does. */
    @org.junit.jupiter.api.Test
    void theWhereTableShowsDeadLettersOfCompleteLoadsToo() {
        assertThat(AuditStoreCli.completeness(summary(true, 3))).isEqualTo("true,dlq:3");
        assertThat(AuditStoreCli.completeness(summary(true, 0))).isEqualTo("true");
        assertThat(AuditStoreCli.completeness(summary(false, 2))).isEqualTo("dlq:2");
        assertThat(AuditStoreCli.completeness(summary(false, 0))).isEqualTo("false");
    }

    private static dev.placementaudit.store.query.LoadQueries.LoadSummary summary(boolean complete, int deadLettered) {
        return new dev.placementaudit.store.query.LoadQueries.LoadSummary("l", "d", "c", "h", "r1", "m", "model", "jvm", "desktop",
                java.time.Instant.EPOCH, complete, 3, 0, 0, 0, 0, 0, 0, "v", "p", deadLettered, null, null, null, null, null);
    }
}
