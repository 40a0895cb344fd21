package dev.placementaudit.store.incidents;

import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.TestDatabase;
import org.flywaydb.core.Flyway;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The incidents list's order (open first, then the most recently seen, then by id) and its limit are the database's:
 * the first {@code most} are the same as the first of the whole list, and the rest are never read.
 */
class IncidentListTest {
    @DatabaseTest
    void theFirstOfTheListAreTheFirstOfTheWholeList(TestDatabase db) throws Exception {
        Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").load().migrate();
        Instant t = Instant.parse("2026-11-01T00:00:00Z");
        try (Connection c = db.dataSource().getConnection()) {
            // Seen last: a resolved one; then two open ones seen at the same moment (the id breaks the tie); then an old open one.
            insert(c, "inc-resolved-newest", "RESOLVED", t.plusSeconds(400));
            insert(c, "inc-open-b", "OPEN", t.plusSeconds(300));
            insert(c, "inc-open-a", "OPEN", t.plusSeconds(300));
            insert(c, "inc-open-oldest", "OPEN", t.plusSeconds(100));
            insert(c, "inc-resolved-oldest", "RESOLVED", t);
            List<String> all = Incidents.list(c, false, null, null).stream().map(Incidents.Incident::incidentId).toList();
            assertThat(all).containsExactly("inc-open-a", "inc-open-b", "inc-open-oldest", "inc-resolved-newest", "inc-resolved-oldest");
            for (int most = 0; most <= all.size() + 1; most++) {
                assertThat(Incidents.list(c, false, null, null, most)).extracting(Incidents.Incident::incidentId)
                        .containsExactlyElementsOf(all.subList(0, Math.min(most, all.size())));
            }
            assertThat(Incidents.list(c, true, "r2", "m", 2)).extracting(Incidents.Incident::incidentId).containsExactly("inc-open-a", "inc-open-b");
        }
    }

    private static void insert(Connection c, String id, String state, Instant lastSeen) throws Exception {
        try (PreparedStatement s = c.prepareStatement("INSERT INTO incidents (incident_id, model_id, from_release, to_release, primary_kind, kinds, "
                + "cause, tensor_count, tensors_digest, tensors, state, first_seen, last_seen, version, updated_at) VALUES (?, 'm', 'r1', 'r2', "
                + "'LOST_MAPPING', 'LOST_MAPPING', 're-encoded at load', 1, 'd', 'blk.0.weight', ?, ?, ?, 1, ?)")) {
            s.setString(1, id);
            s.setString(2, state);
            s.setTimestamp(3, Timestamp.from(lastSeen));
            s.setTimestamp(4, Timestamp.from(lastSeen));
            s.setTimestamp(5, Timestamp.from(lastSeen));
            s.executeUpdate();
        }
    }
}
