package dev.placementaudit.store.ingest;

import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.regression.LoadRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Release heads: the latest complete load in the log of each deployment, model and release, what the fleet view of a
 * release shows. A head is a mark on its load's row ({@code load_rows.is_head}, docs/adr/0014), set when the row is
 * written as its load completes and cleared on the head it replaces; {@code release_heads} is the view of the marked
 * rows, so {@code fleet} reads one row per deployment and model of a release.
 */
public final class ReleaseHeads {
    private static final Logger LOG = LoggerFactory.getLogger(ReleaseHeads.class);

    /**
     * Marks, after a deployment's loads were deleted, the latest complete load left of each of its releases that has no
     * head (its head was deleted): the only writer of heads but ingestion, and it needs no positions in Java.
     */
    public static final String REMARK = "UPDATE load_rows l SET is_head = TRUE WHERE l.deployment_id = ? AND l.complete = TRUE AND l.is_head = FALSE "
            + "AND NOT EXISTS (SELECT 1 FROM load_rows x WHERE x.complete = TRUE AND x.deployment_id = l.deployment_id AND x.model_id = l.model_id "
            + "AND x.release_name = l.release_name AND (x.is_head = TRUE OR " + LoadRef.LATER_IN_THE_LOG + "))";

    private ReleaseHeads() {
    }

    /**
     * What the batch's completing loads are marked as when written.
     *
     * @param heads  the loads that become their release's head ({@code is_head})
     * @param latest of those, the one that becomes its deployment's latest of its model ({@code is_latest}, V29): the
     *               deployments a release is on now, which an incident's exposure and the gate count
     */
    record Marks(Set<String> heads, Set<String> latest) {
    }

    /**
     * Which of these completing loads become their release's head, clearing the mark on the heads they replace; and
     * which become their deployment's latest of their model, clearing that mark on the load it was on. Loads complete in
     * log order per deployment (docs/adr/0006), so each is later in the log than any head of its deployment; of several
     * of one release in the batch, the last in the log is the head, and of several of one model, the last is the latest.
     * A head later in the log than the one that would replace it (which that order rules out) keeps its mark, and is
     * logged.
     *
     * @param completing the loads the batch completes, before their rows are written
     */
    static Marks mark(Connection c, Collection<LoadRef> completing) throws SQLException {
        Map<List<String>, LoadRef> latest = new LinkedHashMap<>();
        completing.forEach(load -> latest.merge(key(load.deploymentId(), load.modelId(), load.release()), load,
                (a, b) -> LoadRef.IN_LOG_ORDER.compare(a, b) >= 0 ? a : b));
        Set<String> marked = new HashSet<>();
        if (latest.isEmpty()) {
            return new Marks(marked, Set.of());
        }
        latest.values().forEach(load -> marked.add(load.loadId()));
        List<LoadRef> replaced = new ArrayList<>();
        List<LoadRef> wasLatest = new ArrayList<>();
        Set<String> deployments = new HashSet<>();
        latest.values().forEach(load -> deployments.add(load.deploymentId()));
        for (List<String> chunk : InList.chunks(deployments)) {
            try (PreparedStatement s = InList.prepare(c, "SELECT load_id, deployment_id, model_id, release_name, summary_partition, summary_offset, "
                    + "is_latest, occurred_at FROM load_rows WHERE is_head = TRUE AND deployment_id IN (%s)", chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    long offset = rs.getLong(6);
                    LoadRef current = new LoadRef(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getTimestamp(8).toInstant(),
                            null, null, rs.wasNull() ? null : new LoadRef.Position(rs.getInt(5), offset));
                    if (rs.getBoolean(7)) {
                        wasLatest.add(current);
                    }
                    LoadRef head = latest.get(key(rs.getString(2), rs.getString(3), rs.getString(4)));
                    if (head == null || head.loadId().equals(rs.getString(1))) {
                        continue;
                    }
                    if (LoadRef.IN_LOG_ORDER.compare(current, head) > 0) {
                        LOG.warn("load {} completes before release head {} of {} {} {} in the log: the head stays", head.loadId(),
                                current.loadId(), current.deploymentId(), current.modelId(), current.release());
                        marked.remove(head.loadId());
                    } else {
                        replaced.add(current);
                    }
                }
            }
        }
        // The latest of each deployment and model: the last in the log of the heads the batch marks, unless the one
        // marked now is later (which log order rules out, as above).
        Map<List<String>, LoadRef> newest = new HashMap<>();
        latest.values().stream().filter(load -> marked.contains(load.loadId())).forEach(load -> newest.merge(
                List.of(load.deploymentId(), load.modelId()), load, (a, b) -> LoadRef.IN_LOG_ORDER.compare(a, b) >= 0 ? a : b));
        List<LoadRef> unlatest = new ArrayList<>();
        for (LoadRef was : wasLatest) {
            LoadRef now = newest.get(List.of(was.deploymentId(), was.modelId()));
            if (now == null || now.loadId().equals(was.loadId())) {
                continue;
            }
            if (LoadRef.IN_LOG_ORDER.compare(was, now) > 0) {
                newest.remove(List.of(was.deploymentId(), was.modelId()));
            } else {
                unlatest.add(was);
            }
        }
        // By id and time: the time lets PostgreSQL go to the one partition (docs/adr/0024) instead of probing every month.
        update(c, "UPDATE load_rows SET is_head = FALSE, is_latest = FALSE WHERE load_id = ? AND occurred_at = ?", replaced);
        Set<String> gone = new HashSet<>();
        replaced.forEach(r -> gone.add(r.loadId()));
        update(c, "UPDATE load_rows SET is_latest = FALSE WHERE load_id = ? AND occurred_at = ?",
                unlatest.stream().filter(r -> !gone.contains(r.loadId())).toList());
        Set<String> latestIds = new HashSet<>();
        newest.values().forEach(load -> latestIds.add(load.loadId()));
        return new Marks(marked, latestIds);
    }

    private static void update(Connection c, String sql, List<LoadRef> rows) throws SQLException {
        if (rows.isEmpty()) {
            return;
        }
        try (PreparedStatement s = c.prepareStatement(sql)) {
            for (LoadRef row : rows) {
                s.setString(1, row.loadId());
                s.setTimestamp(2, Timestamp.from(row.occurredAt()));
                s.addBatch();
            }
            s.executeBatch();
        }
    }

    private static List<String> key(String deployment, String model, String release) {
        return List.of(deployment, model, release);
    }
}
