package dev.placementaudit.store.incidents;

import dev.placementaudit.events.PlacementIncident;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.store.Outboxes;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.extension.ExtendWith;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Store instances publishing incidents beside batches that settle them (seen in the chaos soak as "deadlock detected" on
 * {@code incidents}, retried): a claim locks in id order and skips a row another transaction holds, so it neither waits
 * for a batch nor deadlocks with another instance's claim; each incident's version is published once.
 */
@ExtendWith(KafkaBrokerExtension.class)
class IncidentClaimTest {
    private static final EventSerde<PlacementIncident> INCIDENTS = EventSerde.of(PlacementIncident.class);
    private static final String UNPUBLISHED = "SELECT COUNT(*) FROM incidents WHERE published_version IS NULL";

    @DatabaseTest
    void aClaimSkipsAnIncidentABatchHoldsAndTakesItAtTheNextSweep(KafkaBroker broker, TestDatabase db) throws Exception {
        String topic = KafkaBroker.uniqueTopic("incidents");
        broker.createTopics(1, topic);
        ExecutorService sweeper = Executors.newSingleThreadExecutor();
        try (AuditDatabase database = AuditDatabase.open(db.jdbcUrl(), db.user(), db.password(), db.schema(), 4);
             IncidentPublisher publisher = new IncidentPublisher(database.dataSource(), broker.clientConfig(), topic, "claim-test",
                     Duration.ofSeconds(1), Clock.systemUTC());
             Connection batch = database.dataSource().getConnection()) {
            incidents(database, 5);
            // A batch settling inc-0002 holds its row, as the ledger does (SELECT ... FOR UPDATE, in id order).
            batch.setAutoCommit(false);
            try (PreparedStatement s = batch.prepareStatement("SELECT incident_id FROM incidents WHERE incident_id = 'inc-0002' FOR UPDATE")) {
                s.executeQuery().close();
            }

            Future<Integer> sweep = sweeper.submit(publisher::publishPending);
            assertThat(sweep.get(20, TimeUnit.SECONDS)).as("published without waiting for the batch").isEqualTo(4);

            batch.commit();
            assertThat(publisher.publishPending()).as("the held one, at the next sweep").isEqualTo(1);
            assertThat(publisher.publishPending()).isZero();
        } finally {
            sweeper.shutdownNow();
        }
        Outboxes.assertPublishedOnceEach(broker, topic, 5, value -> INCIDENTS.decode(value).getIncidentId());
    }

    @DatabaseTest
    void twoInstancesPublishingAtOnceNeverDeadlockAndPublishEachIncidentOnce(KafkaBroker broker, TestDatabase db) throws Exception {
        String topic = KafkaBroker.uniqueTopic("incidents");
        broker.createTopics(1, topic);
        int count = 3 * IncidentPublisher.PAGE;
        ExecutorService instances = Executors.newFixedThreadPool(2);
        try (AuditDatabase database = AuditDatabase.open(db.jdbcUrl(), db.user(), db.password(), db.schema(), 4);
             IncidentPublisher a = new IncidentPublisher(database.dataSource(), broker.clientConfig(), topic, "claim-test",
                     Duration.ofSeconds(1), Clock.systemUTC());
             IncidentPublisher b = new IncidentPublisher(database.dataSource(), broker.clientConfig(), topic, "claim-test",
                     Duration.ofSeconds(1), Clock.systemUTC())) {
            incidents(database, count);
            List<Future<Integer>> drained = instances.invokeAll(List.of(Outboxes.drain(a::publishPending, database, UNPUBLISHED),
                    Outboxes.drain(b::publishPending, database, UNPUBLISHED)));
            assertThat(drained.get(0).get(60, TimeUnit.SECONDS) + drained.get(1).get(60, TimeUnit.SECONDS)).isEqualTo(count);
        } finally {
            instances.shutdownNow();
        }
        Outboxes.assertPublishedOnceEach(broker, topic, count, value -> INCIDENTS.decode(value).getIncidentId());
    }

    /** Incidents opened and never published: inc-0000, inc-0001, ... */
    private static void incidents(AuditDatabase database, int count) throws SQLException {
        Timestamp at = Timestamp.from(Instant.parse("2026-11-01T00:00:00Z"));
        try (Connection c = database.dataSource().getConnection(); PreparedStatement s = c.prepareStatement("INSERT INTO incidents (incident_id, "
                + "model_id, from_release, to_release, primary_kind, kinds, cause, tensor_count, tensors_digest, tensors, state, first_seen, last_seen, "
                + "version, updated_at) VALUES (?, 'm', 'r1', 'r2', 'OFFHEAP_GROWTH', 'OFFHEAP_GROWTH', 'a cause', 1, 'd', 'blk.0.ffn_up.weight', "
                + "'OPEN', ?, ?, 1, ?)")) {
            for (int i = 0; i < count; i++) {
                s.setString(1, String.format("inc-%04d", i));
                s.setTimestamp(2, at);
                s.setTimestamp(3, at);
                s.setTimestamp(4, at);
                s.addBatch();
            }
            s.executeBatch();
        }
    }
}
