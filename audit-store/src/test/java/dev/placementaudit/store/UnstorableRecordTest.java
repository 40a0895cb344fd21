package dev.placementaudit.store;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.store.query.AuditQueries;
import dev.placementaudit.store.query.LoadQueries;
import dev.placementaudit.store.regression.GrowthRule;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.PostgresServer;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.testkit.TopicReader;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A record the database refuses as content (SQLSTATE class 22 or 23) is set aside, not retried forever: it goes to the
 * dead-letter topic with the SQLSTATE and the database's message, its load says it is missing a record, and the loads
 * before and after it in the same batch are stored with their offsets.
 */
@ExtendWith(KafkaBrokerExtension.class)
class UnstorableRecordTest {
    private static void poisonBetweenGoodLoads(StoreHarness h, UnaryOperator<AllocationDecided> decision, UnaryOperator<LoadResolved> summary)
            throws Exception {
        h.publish(List.of(StoreHarness.load("phone-1", "r1", 2, 0, false)));
        h.publishTampered(StoreHarness.load("phone-2", "r1", 2, 1, false), decision, summary);
        h.publish(List.of(StoreHarness.load("phone-3", "r1", 2, 2, false), StoreHarness.load("phone-1", "r2", 2, 3, true)));
    }

    private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
        var header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    /** Runs the store until the good loads are complete and {@code setAside} records are dead-lettered; returns the dead letters. */
    private static List<ConsumerRecord<byte[], byte[]>> ingest(StoreHarness h, int setAside) throws Exception {
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 3
                    && h.count("SELECT COUNT(*) FROM dead_letters") == setAside);
            assertThat(store.state()).isEqualTo(dev.placementaudit.store.ingest.IngestLoop.State.RUNNING);
        }
        return TopicReader.readCommitted(h.broker, h.decisions + ".dlq", setAside);
    }

    @DatabaseTest
    void aDecisionTheSchemaRefusesIsDeadLetteredWithItsSqlStateAndTheLoadsAroundItAreStored(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        poisonBetweenGoodLoads(h, d -> AllocationDecided.newBuilder(d).setResidentBytes(-1L).build(), s -> s);

        List<ConsumerRecord<byte[], byte[]>> dead = ingest(h, 1);

        assertThat(dead).hasSize(1);
        assertThat(header(dead.get(0), DeadLetter.REASON)).isEqualTo("UNSTORABLE");
        // A check constraint's violation: PostgreSQL says 23514, H2 23513; both are class 23, content.
        assertThat(header(dead.get(0), DeadLetter.DETAIL)).isIn("SQLSTATE 23514", "SQLSTATE 23513");
        assertThat(header(dead.get(0), DeadLetter.ERROR)).containsIgnoringCase("decisions_sizes_not_negative");
        assertThat(header(dead.get(0), DeadLetter.SOURCE_TOPIC)).isEqualTo(h.decisions);
        LoadQueries.LoadSummary poisoned = new AuditQueries(db.dataSource(), new GrowthRule("off-heap", 10, 1 << 20), new GrowthRule("heap", 10, 1 << 20)).loads("phone-2", null, null, 10).get(0);
        assertThat(poisoned.complete()).isFalse();
        assertThat(poisoned.deadLetteredRecords()).isEqualTo(1);
        assertThat(h.count("SELECT COUNT(*) FROM findings")).as("phone-1's r2 was still compared with its r1").isPositive();
        java.io.StringWriter out = new java.io.StringWriter();
        picocli.CommandLine where = dev.placementaudit.store.cli.AuditStoreCli.commandLine(null);
        where.setOut(new java.io.PrintWriter(out, true));
        assertThat(where.execute("where", "--deployment", "phone-2", "--set", "store.jdbc.url=" + db.jdbcUrl(), "--set", "store.jdbc.user=" + db.user()))
                .isZero();
        assertThat(out.toString()).as("the where table").contains("dlq:1");
    }

    @DatabaseTest
    void aValueLongerThanItsColumnIsDeadLetteredBeforeTheDatabaseIsAsked(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        poisonBetweenGoodLoads(h, d -> AllocationDecided.newBuilder(d).setTensorName("w".repeat(5_000)).build(), s -> s);

        List<ConsumerRecord<byte[], byte[]>> dead = ingest(h, 1);

        assertThat(header(dead.get(0), DeadLetter.REASON)).isEqualTo("UNSTORABLE");
        assertThat(header(dead.get(0), DeadLetter.DETAIL)).isEqualTo("COLUMN_OVERFLOW");
        assertThat(header(dead.get(0), DeadLetter.ERROR)).contains("tensor_name (5000 characters, at most 1000)");
        assertThat(h.count("SELECT COUNT(*) FROM loads WHERE deployment_id = 'phone-2' AND complete = FALSE")).isEqualTo(1);
    }

    @Test
    void aNulInATensorNameIsDeadLetteredOnPostgresql(KafkaBroker broker) throws Exception {
        try (TestDatabase db = PostgresServer.fromEnvironment().createIsolatedSchema()) {
            StoreHarness h = new StoreHarness(broker, db);
            poisonBetweenGoodLoads(h, d -> AllocationDecided.newBuilder(d).setTensorName("blk.0.attn_q\u0000.weight").build(), s -> s);

            List<ConsumerRecord<byte[], byte[]>> dead = ingest(h, 1);

            assertThat(header(dead.get(0), DeadLetter.DETAIL)).isEqualTo("SQLSTATE 22021");
            assertThat(header(dead.get(0), DeadLetter.ERROR)).contains("0x00");
        }
    }

    @Test
    void aTimeBeyondPostgresqlsRangeIsDeadLetteredThere(KafkaBroker broker) throws Exception {
        try (TestDatabase db = PostgresServer.fromEnvironment().createIsolatedSchema()) {
            StoreHarness h = new StoreHarness(broker, db);
            // Year 292,278,994: a long of milliseconds holds it, PostgreSQL's timestamps end in 294,276.
            poisonBetweenGoodLoads(h, d -> d, s -> LoadResolved.newBuilder(s).setLoadOccurredAt(Instant.ofEpochMilli(Long.MAX_VALUE / 2)).build());

            List<ConsumerRecord<byte[], byte[]>> dead = ingest(h, 1);

            assertThat(header(dead.get(0), DeadLetter.DETAIL)).isEqualTo("SQLSTATE 22008");
            assertThat(header(dead.get(0), DeadLetter.SOURCE_TOPIC)).isEqualTo(h.resolved);
            assertThat(h.count("SELECT COUNT(*) FROM dead_letters WHERE load_id IS NOT NULL")).isEqualTo(1);
        }
    }
}
