package dev.placementaudit.store;

import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.replay.ProjectionRebuild;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.resolution.ResolvedLoad;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The projection is a function of the log (docs/adr/0006): a deployment's history is the order its loads stand in the
 * log, whatever times the events carry and however the store's batches fall, so the live store, its rebuild and any
 * other store reading the same log write the same loads, comparisons, alerts, heads and chain.
 */
@ExtendWith(KafkaBrokerExtension.class)
class LateLoadsTest {

    /**
     * A device reports r6 after r2, dated before it (a phone that was offline, a simulator's clock): r6 is compared with
     * r2, the load before it in the log, and r2 keeps the comparison it was alerted on, live one record at a time and
     * rebuilt thousands at a time alike.
     */
    @DatabaseTest
    void eventTimesOrderNothingLiveAndRebuiltAlike(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        List<ModelLoaded> loads = List.of(StoreHarness.load("dep-0", "r1", 2, 1, false), StoreHarness.load("dep-0", "r2", 2, 10, true),
                StoreHarness.load("dep-0", "r6", 2, 5, false));
        h.publish(loads);
        Map<String, String> live = h.settings();
        live.put("store.max.poll.records", "1");
        try (AuditStore store = h.start(live)) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 3);
        }

        assertThat(previousOf(db, loads.get(1))).isEqualTo(id(loads.get(0)));
        assertThat(previousOf(db, loads.get(2))).as("the load before it in the log, though dated earlier").isEqualTo(id(loads.get(1)));
        assertThat(h.count("SELECT COUNT(*) FROM alerts WHERE kind = 'LOST_MAPPING' AND to_load_id = '" + id(loads.get(1)) + "' AND from_load_id = '"
                + id(loads.get(0)) + "'")).isOne();
        assertThat(chain(db, "dep-0")).containsExactly(id(loads.get(0)), id(loads.get(1)), id(loads.get(2)));
        assertRebuildEqual(h);
    }

    /**
     * The summaries are read before the decisions (the topics are read independently, and the decisions are many): the
     * second load's plan is stored already, the first's is new and waits for its decisions. The second waits for the
     * first, so the chain, the comparison and the heads are what reading the log in order gives.
     */
    @DatabaseTest
    void aLoadWaitsForTheLoadsBeforeItInTheLog(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        h.publish(List.of(StoreHarness.load("dep-known", "r1", 2, 0, false)));
        ResolvedLoad first = h.resolve(StoreHarness.load("dep-y", "r1", 3, 1, false));
        ResolvedLoad second = h.resolve(StoreHarness.load("dep-y", "r2", 2, 2, false));
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 1);
            send(h, h.resolved, List.of(first, second), true);
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE deployment_id = 'dep-y'") == 2);
            // One more batch for dep-known's partition or any other: the second load still waits behind the first.
            h.publish(List.of(StoreHarness.load("dep-known", "r2", 2, 3, false)));
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 2);
            assertThat(h.count("SELECT COUNT(*) FROM loads WHERE deployment_id = 'dep-y' AND complete = TRUE"))
                    .as("the second load, whose plan is stored, waits for the first").isZero();

            send(h, h.decisions, List.of(first, second), false);
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 4);
        }

        String firstId = first.summary().getLoadId().toString();
        String secondId = second.summary().getLoadId().toString();
        assertThat(chain(db, "dep-y")).containsExactly(firstId, secondId);
        assertThat(previousOf(db, secondId)).isEqualTo(firstId);
        StoreHarness.assertReleaseHeads(h);
        assertRebuildEqual(h);
    }

    /**
     * A load one of whose decisions is unreadable can never complete; once the next load's decisions have gone past it,
     * it holds nothing up: the next load completes and is compared with the last load that did.
     */
    @DatabaseTest
    void aLoadThatCanNeverCompleteHoldsNothingUp(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        ModelLoaded r1 = StoreHarness.load("dep-z", "r1", 2, 0, false);
        h.publish(List.of(r1));
        ResolvedLoad broken = h.resolve(StoreHarness.load("dep-z", "r2", 3, 1, false));
        ResolvedLoad next = h.resolve(StoreHarness.load("dep-z", "r3", 4, 2, false));
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(broker.clientConfig(), new ByteArraySerializer(), new ByteArraySerializer())) {
            byte[] key = "dep-z".getBytes(StandardCharsets.UTF_8);
            List<AllocationDecided> decisions = broken.decisions();
            producer.send(new ProducerRecord<>(h.decisions, key, "not an event".getBytes(StandardCharsets.UTF_8)));
            for (AllocationDecided d : decisions.subList(1, decisions.size())) {
                producer.send(new ProducerRecord<>(h.decisions, key, StoreHarness.DECISIONS.encode(d)));
            }
            producer.send(new ProducerRecord<>(h.resolved, key, StoreHarness.SUMMARIES.encode(broken.summary()))).get(10, TimeUnit.SECONDS);
        }
        send(h, h.decisions, List.of(next), false);
        send(h, h.resolved, List.of(next), true);
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 2);
        }

        String nextId = next.summary().getLoadId().toString();
        assertThat(previousOf(db, nextId)).isEqualTo(id(r1));
        assertThat(h.count("SELECT COUNT(*) FROM loads WHERE load_id = '" + broken.summary().getLoadId() + "' AND complete = FALSE")).isOne();
        assertThat(chain(db, "dep-z")).containsExactly(id(r1), nextId);
        assertRebuildEqual(h);
    }

    private static void send(StoreHarness h, String topic, List<ResolvedLoad> loads, boolean summaries) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(h.broker.clientConfig(), new ByteArraySerializer(), new ByteArraySerializer())) {
            for (ResolvedLoad load : loads) {
                byte[] key = load.summary().getDeploymentId().getBytes(StandardCharsets.UTF_8);
                List<byte[]> values = new ArrayList<>();
                if (summaries) {
                    values.add(StoreHarness.SUMMARIES.encode(load.summary()));
                } else {
                    load.decisions().forEach(d -> values.add(StoreHarness.DECISIONS.encode(d)));
                }
                for (byte[] value : values) {
                    producer.send(new ProducerRecord<>(topic, key, value)).get(10, TimeUnit.SECONDS);
                }
            }
        }
    }

    private static void assertRebuildEqual(StoreHarness h) throws SQLException {
        StringWriter out = new StringWriter();
        ProjectionRebuild.Result result = new ProjectionRebuild(StoreConfig.from(Settings.of(h.settings())), new PrintWriter(out, true))
                .run(Long.MAX_VALUE, false, false);
        assertThat(result.equal()).as(out.toString()).isTrue();
    }

    private static String id(ModelLoaded load) {
        return load.getLoadId().toString();
    }

    private static String previousOf(TestDatabase db, ModelLoaded load) throws SQLException {
        return previousOf(db, id(load));
    }

    private static String previousOf(TestDatabase db, String loadId) throws SQLException {
        try (Connection c = db.connect(); PreparedStatement s = c.prepareStatement("SELECT previous_load_id FROM loads WHERE load_id = ?")) {
            s.setString(1, loadId);
            try (ResultSet rs = s.executeQuery()) {
                assertThat(rs.next()).as("load " + loadId + " stored").isTrue();
                return rs.getString(1);
            }
        }
    }

    /** The deployment's chain: its loads in entry order. */
    private static List<String> chain(TestDatabase db, String deployment) throws SQLException {
        List<String> loads = new ArrayList<>();
        try (Connection c = db.connect(); PreparedStatement s = c.prepareStatement("SELECT load_id FROM chain_entries WHERE deployment_id = ? ORDER BY seq")) {
            s.setString(1, deployment);
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    loads.add(rs.getString(1));
                }
            }
        }
        return loads;
    }
}
