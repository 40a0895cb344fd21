package dev.placementaudit.store.ingest;

import dev.placementaudit.store.regression.LoadRef;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.TestDatabase;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;

import static dev.placementaudit.store.ingest.MigratedDatabase.migrate;
import static dev.placementaudit.store.ingest.MigratedDatabase.rows;
import static dev.placementaudit.store.ingest.MigratedDatabase.transaction;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A release head is a mark on its load's row (V18): the latest complete load in the log of each deployment, model and
 * release is marked, the head it replaces cleared, and retention marks the latest left where it deleted a head.
 */
class ReleaseHeadsTest {
    @DatabaseTest
    void aCompletingLoadReplacesItsReleasesHeadAndOnlyTheLastOfABatchIsMarked(TestDatabase db) throws Exception {
        migrate(db);
        try (Connection c = transaction(db)) {
            row(c, "a", "r1", 1, true, true);
            c.commit();
        }
        try (Connection c = transaction(db)) {
            // b replaces a's mark; c is the first of its release; d and e complete in one batch, e later in the log.
            List<LoadRef> completing = List.of(load("b", "r1", 5), load("c", "r2", 6), load("d", "r3", 7), load("e", "r3", 8));
            ReleaseHeads.Marks marks = ReleaseHeads.mark(c, completing);
            assertThat(marks.heads()).containsExactlyInAnyOrder("b", "c", "e");
            assertThat(marks.latest()).as("the last in the log of the model's").containsExactly("e");
            for (LoadRef load : completing) {
                row(c, load.loadId(), load.release(), (int) load.position().offset(), true, List.of("b", "c", "e").contains(load.loadId()));
            }
            c.commit();
        }
        assertThat(heads(db)).containsExactly("b r1", "c r2", "e r3");
        assertThat(rows(db, "SELECT load_id FROM release_heads ORDER BY load_id")).containsExactly("b", "c", "e");
    }

    @DatabaseTest
    void aHeadLaterInTheLogThanTheLoadThatWouldReplaceItStays(TestDatabase db) throws Exception {
        migrate(db);
        try (Connection c = transaction(db)) {
            row(c, "late", "r1", 100, true, true);
            c.commit();
        }
        try (Connection c = transaction(db)) {
            ReleaseHeads.Marks marks = ReleaseHeads.mark(c, List.of(load("early", "r1", 50)));
            assertThat(marks.heads()).isEmpty();
            assertThat(marks.latest()).isEmpty();
            row(c, "early", "r1", 50, true, false);
            c.commit();
        }
        assertThat(heads(db)).containsExactly("late r1");
    }

    /**
     * The latest load of each deployment and model (V29) is the last head in the log: it moves to each new release's
     * head, and what counts the deployments a release is on now (an incident's exposure, the gate) counts those marks.
     */
    @DatabaseTest
    void theLatestMarkMovesToTheNewestHeadOfTheModel(TestDatabase db) throws Exception {
        migrate(db);
        try (Connection c = transaction(db)) {
            row(c, "a", "r1", 1, true, true, true);
            c.commit();
        }
        try (Connection c = transaction(db)) {
            // a later load of r1 (its head and the latest), then r2 in the next batch.
            ReleaseHeads.Marks marks = ReleaseHeads.mark(c, List.of(load("b", "r1", 5)));
            assertThat(marks.latest()).containsExactly("b");
            row(c, "b", "r1", 5, true, true, true);
            c.commit();
        }
        assertThat(rows(db, "SELECT load_id FROM load_rows WHERE is_latest = TRUE")).containsExactly("b");
        try (Connection c = transaction(db)) {
            ReleaseHeads.Marks marks = ReleaseHeads.mark(c, List.of(load("c", "r2", 9)));
            assertThat(marks.heads()).containsExactly("c");
            assertThat(marks.latest()).containsExactly("c");
            row(c, "c", "r2", 9, true, true, true);
            c.commit();
        }
        assertThat(heads(db)).as("r1's head stays its head, no longer the latest").containsExactly("b r1", "c r2");
        assertThat(rows(db, "SELECT load_id FROM load_rows WHERE is_latest = TRUE")).containsExactly("c");
        try (Connection c = db.dataSource().getConnection()) {
            assertThat(dev.placementaudit.store.incidents.Incidents.onRelease(c, "llama", "r2")).isEqualTo(1);
            assertThat(dev.placementaudit.store.incidents.Incidents.onRelease(c, "llama", "r1")).isZero();
        }
    }

    @DatabaseTest
    void retentionMarksTheLatestLoadLeftWhereItDeletedAHeadAndNothingElse(TestDatabase db) throws Exception {
        migrate(db);
        try (Connection c = transaction(db)) {
            row(c, "r1-first", "r1", 1, true, false);
            row(c, "r1-second", "r1", 2, true, false);
            row(c, "r1-head", "r1", 3, true, true);
            row(c, "r1-waiting", "r1", 4, false, false);
            row(c, "r2-first", "r2", 5, true, false);
            row(c, "r2-head", "r2", 6, true, true);
            c.commit();
        }
        try (Connection c = transaction(db); PreparedStatement delete = c.prepareStatement("DELETE FROM load_rows WHERE load_id = 'r1-head'");
             PreparedStatement remark = c.prepareStatement(ReleaseHeads.REMARK)) {
            delete.executeUpdate();
            remark.setString(1, "phone-1");
            assertThat(remark.executeUpdate()).isEqualTo(1);
            c.commit();
        }
        // The latest complete load left heads r1 (not the one still waiting); r2's head stays the only one of r2.
        assertThat(heads(db)).containsExactly("r1-second r1", "r2-head r2");
    }

    private static LoadRef load(String id, String release, long offset) {
        return new LoadRef(id, "phone-1", "llama", release, Instant.parse("2026-12-01T00:00:00Z"), "v1", "ab".repeat(32), new LoadRef.Position(0, offset));
    }

    private static void row(Connection c, String id, String release, int offset, boolean complete, boolean head) throws SQLException {
        row(c, id, release, offset, complete, head, false);
    }

    private static void row(Connection c, String id, String release, int offset, boolean complete, boolean head, boolean latest) throws SQLException {
        try (PreparedStatement s = c.prepareStatement("INSERT INTO load_rows (load_id, deployment_id, release_name, model_id, site_key, build_key, "
                + "occurred_at, resolved_at, tensor_count, stored_bytes, resident_bytes, heap_bytes, offheap_bytes, mapped_bytes, heap_tensors, "
                + "offheap_tensors, mapped_tensors, complete, summary_partition, summary_offset, is_head, is_latest) VALUES (?, 'phone-1', ?, 'llama', 1, 1, ?, ?, "
                + "1, 10, 10, 0, 10, 0, 0, 1, 0, ?, 0, ?, ?, ?)")) {
            Timestamp at = Timestamp.from(Instant.parse("2026-12-01T00:00:00Z").plusSeconds(offset));
            s.setString(1, id);
            s.setString(2, release);
            s.setTimestamp(3, at);
            s.setTimestamp(4, at);
            s.setBoolean(5, complete);
            s.setLong(6, offset);
            s.setBoolean(7, head);
            s.setBoolean(8, latest);
            s.executeUpdate();
        }
    }

    private static List<String> heads(TestDatabase db) throws SQLException {
        return rows(db, "SELECT load_id || ' ' || release_name FROM load_rows WHERE is_head = TRUE ORDER BY release_name, load_id");
    }
}
