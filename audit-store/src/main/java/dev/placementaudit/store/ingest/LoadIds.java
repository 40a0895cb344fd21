package dev.placementaudit.store.ingest;

import dev.placementaudit.resolution.LoadIdentity;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.store.db.ById;
import dev.placementaudit.store.db.InList;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A load id stands for one load: the first stored under it. A summary or decision that comes under a stored id (or under
 * an id an earlier record of the batch brought) with another {@link LoadIdentity} is a conflict, turned into a reject for
 * the dead letters before anything is written: its decisions never mix with the first load's, its summary never replaces
 * it, and {@code store where --load} and {@code /health} say it came. The same load again (a retry, the same bytes) is
 * a silent no-op, as before. The dead letter names the load id, for {@code where --load}; it does not hold the first
 * load up ({@link #NOT_THE_LOADS}).
 */
public final class LoadIds {
    /**
     * Dead letters that name a load but are no part of it (an observation of another deployment, a conflict under its
     * id): they neither keep it from completing nor count as its missing records. As SQL, for {@code detail NOT IN (...)}.
     */
    public static final String NOT_THE_LOADS = "'" + ObservationRows.DEPLOYMENT_MISMATCH + "', '" + LoadIdentity.CONFLICT + "'";

    private LoadIds() {
    }

    /** The batch with each record of a conflicting load turned into a reject. */
    static List<Decoded> bind(Connection c, List<Decoded> batch) throws SQLException {
        Set<String> ids = new LinkedHashSet<>();
        for (Decoded item : batch) {
            if (item instanceof Decoded.Summary s) {
                ids.add(s.event().getLoadId().toString());
            } else if (item instanceof Decoded.Decision d) {
                ids.add(d.event().getLoadId());
            }
        }
        if (ids.isEmpty()) {
            return batch;
        }
        Map<String, LoadIdentity> stored = stored(c, ids);
        // Not stored: the batch's first summary of the id stands for it, else its first decision; with the model-loads record
        // it was made from, whose outputs are one load whatever they say (a record at odds with its own load is no conflict).
        Map<String, Made> met = new HashMap<>();
        for (Decoded item : batch) {
            if (item instanceof Decoded.Summary s && !stored.containsKey(s.event().getLoadId().toString())) {
                met.putIfAbsent(s.event().getLoadId().toString(), Made.of(item));
            }
        }
        List<Decoded> bound = new ArrayList<>(batch.size());
        for (Decoded item : batch) {
            Made made = Made.of(item);
            if (made == null) {
                bound.add(item);
                continue;
            }
            String loadId = made.loadId();
            String conflict;
            if (stored.containsKey(loadId)) {
                conflict = made.identity().conflictWith(loadId, stored.get(loadId), "stored");
            } else {
                Made reference = met.putIfAbsent(loadId, made);
                conflict = reference == null || reference.source().equals(made.source()) ? null
                        : made.identity().conflictWith(loadId, reference.identity(), "met first");
            }
            bound.add(conflict == null ? item : new Decoded.Reject(item.record(), DeadLetter.Reason.INVALID_CONTENT, LoadIdentity.CONFLICT,
                    Text.printable(conflict, 2_000), loadId));
        }
        return bound;
    }

    /** A summary's or decision's load, and the {@code model-loads} record it was made from ({@code topic-partition@offset}). */
    private record Made(String loadId, LoadIdentity identity, String source) {
        static Made of(Decoded item) {
            if (item instanceof Decoded.Summary s) {
                var e = s.event();
                return new Made(e.getLoadId().toString(), LoadIdentity.of(e), e.getSourceTopic() + "-" + e.getSourcePartition() + "@" + e.getSourceOffset());
            }
            if (item instanceof Decoded.Decision d) {
                var e = d.event();
                return new Made(e.getLoadId(), LoadIdentity.of(e), e.getSourceTopic() + "-" + e.getSourcePartition() + "@" + e.getSourceOffset());
            }
            return null;
        }
    }

    private static Map<String, LoadIdentity> stored(Connection c, Set<String> ids) throws SQLException {
        Map<String, LoadIdentity> stored = new HashMap<>();
        for (List<String> chunk : InList.chunks(ids)) {
            try (PreparedStatement s = InList.prepare(c, "SELECT load_id, deployment_id, release_name, model_id, model_sha256, platform_name, "
                    + "profile_name, occurred_at, tensor_count FROM loads WHERE " + ById.in(""), chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    stored.put(rs.getString(1), new LoadIdentity(rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5),
                            rs.getString(6), rs.getString(7), rs.getTimestamp(8).toInstant(), rs.getInt(9)));
                }
            }
        }
        return stored;
    }
}
