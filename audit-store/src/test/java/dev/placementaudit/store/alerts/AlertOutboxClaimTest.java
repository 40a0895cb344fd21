package dev.placementaudit.store.alerts;

import dev.placementaudit.events.PlacementAlert;
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
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two live store instances drain one outbox at once (what was seen after a kill: the survivors each published the dead
 * instance's leftovers): each alert is published once, by one of them.
 */
@ExtendWith(KafkaBrokerExtension.class)
class AlertOutboxClaimTest {
    private static final int ALERTS = 1_200;
    private static final EventSerde<PlacementAlert> ALERTS_SERDE = EventSerde.of(PlacementAlert.class);
    private static final String UNPUBLISHED = "SELECT COUNT(*) FROM alerts WHERE published_at IS NULL";

    @DatabaseTest
    void twoInstancesDrainingOneOutboxPublishEachAlertOnce(KafkaBroker broker, TestDatabase db) throws Exception {
        String topic = KafkaBroker.uniqueTopic("alerts");
        broker.createTopics(1, topic);
        try (AuditDatabase database = AuditDatabase.open(db.jdbcUrl(), db.user(), db.password(), db.schema(), 4)) {
            pending(database, ALERTS);
            ExecutorService instances = Executors.newFixedThreadPool(2);
            try (AlertPublisher a = new AlertPublisher(database.dataSource(), broker.clientConfig(), topic, "claim-test");
                 AlertPublisher b = new AlertPublisher(database.dataSource(), broker.clientConfig(), topic, "claim-test")) {
                List<Future<Integer>> drained = instances.invokeAll(List.of(Outboxes.drain(a::publishPending, database, UNPUBLISHED),
                        Outboxes.drain(b::publishPending, database, UNPUBLISHED)));

                assertThat(drained.get(0).get() + drained.get(1).get()).isEqualTo(ALERTS);
                assertThat(drained).allSatisfy(f -> assertThat(f.get()).as("both took part").isPositive());
            } finally {
                instances.shutdownNow();
            }
        }
        Outboxes.assertPublishedOnceEach(broker, topic, ALERTS, value -> ALERTS_SERDE.decode(value).getAlertId());
    }

    private static void pending(AuditDatabase database, int count) throws SQLException {
        try (Connection c = database.dataSource().getConnection(); PreparedStatement s = c.prepareStatement("INSERT INTO alerts (alert_id, kind, "
                + "deployment_id, model_id, from_release, to_release, from_load_id, to_load_id, before_bytes, after_bytes, delta_bytes, rule_text, "
                + "top_tensors, detected_at, causes) VALUES (?, 'OFFHEAP_GROWTH', ?, 'm', 'r1', 'r2', ?, ?, 0, 100, 100, 'rule', '[]', ?, '[]')")) {
            for (int i = 0; i < count; i++) {
                s.setString(1, java.util.UUID.randomUUID().toString());
                s.setString(2, "dep-" + (i % 40));
                s.setString(3, java.util.UUID.randomUUID().toString());
                s.setString(4, java.util.UUID.randomUUID().toString());
                s.setTimestamp(5, Timestamp.from(Instant.parse("2026-11-01T00:00:00Z").plusSeconds(i % 7)));
                s.addBatch();
            }
            s.executeBatch();
        }
    }
}
