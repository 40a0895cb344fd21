package dev.placementaudit.store.ingest;

import dev.placementaudit.events.Divergence;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.store.db.ById;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.db.Sql;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What a runtime said it did, as rows: each load's observation (the first in the log wins; a repeat changes nothing)
 * and the tensors its summary says the runtime placed otherwise than the reference. Written as they arrive, whether
 * or not their load is complete: the findings they give are drawn once both are in (see {@code RuntimeFindings}).
 *
 * <p>An observation is bound to the deployment it names (V24): one for a load of another deployment is dead-lettered
 * ({@link #DEPLOYMENT_MISMATCH}), at once when the load is stored ({@link #bind}), else when the load completes
 * ({@link #detachOthers}); it is kept beside the load's own until then, never in its place.
 */
final class ObservationRows {
    private static final List<String> OBSERVATION_COLUMNS = List.of("load_id", "deployment_id", "observed_at", "method", "heap_before",
            "heap_after", "direct_before", "direct_after", "mapped_before", "mapped_after", "file_mapped", "file_resident", "anon_rss_delta",
            "tensors_reported", "source_partition", "source_offset");
    private static final List<String> OBSERVATION_TYPES = List.of("VARCHAR(36)", "VARCHAR(200)", "TIMESTAMP WITH TIME ZONE", "VARCHAR(200)",
            "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "INTEGER", "INTEGER", "BIGINT");
    private static final List<String> DIVERGENCE_COLUMNS = List.of("load_id", "tensor_index", "tensor_name", "runtime_domain", "runtime_bytes",
            "reference_domain", "reference_bytes", "reference_reason_code", "reference_reason");
    private static final List<String> DIVERGENCE_TYPES = List.of("VARCHAR(36)", "INTEGER", "VARCHAR(1000)", "VARCHAR(20)", "BIGINT",
            "VARCHAR(20)", "BIGINT", "VARCHAR(40)", "VARCHAR(2000)");
    /** The dead letter's detail for an observation that names another deployment than its load's. */
    static final String DEPLOYMENT_MISMATCH = "DEPLOYMENT_MISMATCH";
    private final String insertObservation;
    private final String insertDivergence;
    private final String observationsTopic;
    private final DeadLetterRows deadLetters;

    ObservationRows(Dialect dialect, String observationsTopic, DeadLetterRows deadLetters) {
        this.observationsTopic = observationsTopic;
        this.deadLetters = deadLetters;
        this.insertObservation = dialect.insertIgnoringDuplicates("load_observations", OBSERVATION_COLUMNS, OBSERVATION_TYPES,
                List.of("load_id", "deployment_id"));
        this.insertDivergence = dialect.insertIgnoringDuplicates("load_divergences", DIVERGENCE_COLUMNS, DIVERGENCE_TYPES,
                List.of("load_id", "tensor_index"));
    }

    void writeObservations(Connection c, Collection<Decoded.Observation> observations) throws SQLException {
        if (observations.isEmpty()) {
            return;
        }
        try (PreparedStatement insert = c.prepareStatement(insertObservation)) {
            for (Decoded.Observation observation : observations) {
                LoadObserved o = observation.event();
                Sql.bind(insert, o.getLoadId().toString(), o.getDeploymentId(), Timestamp.from(o.getObservedAt()),
                        Text.printable(o.getMethod().getName(), 200), o.getHeapUsedBeforeBytes(), o.getHeapUsedAfterBytes(), o.getDirectBeforeBytes(),
                        o.getDirectAfterBytes(), o.getMappedBeforeBytes(), o.getMappedAfterBytes(), o.getFileMappedBytes(), o.getFileResidentBytes(),
                        o.getAnonRssDeltaBytes(), o.getTensors().size(), observation.record().partition(), observation.record().offset());
                insert.addBatch();
            }
            insert.executeBatch();
        }
    }

    /**
     * The batch with each observation of a stored load that names another deployment replaced by a reject for the dead
     * letters: a device (or a fleet's token at the collector) cannot mark a load it does not own.
     */
    List<Decoded> bind(Connection c, List<Decoded> batch) throws SQLException {
        List<String> loadIds = new ArrayList<>();
        for (Decoded item : batch) {
            if (item instanceof Decoded.Observation o) {
                loadIds.add(o.event().getLoadId().toString());
            }
        }
        if (loadIds.isEmpty()) {
            return batch;
        }
        Map<String, String> owners = new HashMap<>();
        for (List<String> chunk : InList.chunks(loadIds)) {
            try (PreparedStatement s = InList.prepare(c, "SELECT load_id, deployment_id FROM load_rows WHERE " + ById.in(""), chunk);
                 ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    owners.put(rs.getString(1), rs.getString(2));
                }
            }
        }
        List<Decoded> bound = new ArrayList<>(batch.size());
        for (Decoded item : batch) {
            if (item instanceof Decoded.Observation o) {
                String loadId = o.event().getLoadId().toString();
                String owner = owners.get(loadId);
                if (owner != null && !owner.equals(o.event().getDeploymentId())) {
                    bound.add(new Decoded.Reject(o.record(), DeadLetter.Reason.INVALID_CONTENT, DEPLOYMENT_MISMATCH, mismatch(loadId,
                            o.event().getDeploymentId(), owner), loadId));
                    continue;
                }
            }
            bound.add(item);
        }
        return bound;
    }

    private static String mismatch(String loadId, String named, String owner) {
        return Text.printable("an observation of load " + loadId + " names deployment " + named + ", but the load is " + owner
                + "'s: not attached to it", 2_000);
    }

    /**
     * The observations of these completed loads that name another deployment than the load's (they came before it):
     * each moved to the dead letters, with why. Returns them, as {@code load_id/deployment_id}.
     */
    List<String> detachOthers(Connection c, Collection<String> completedLoadIds, Instant now) throws SQLException {
        List<String> detached = new ArrayList<>();
        if (completedLoadIds.isEmpty()) {
            return detached;
        }
        record Stray(String loadId, String deployment, String owner, int partition, long offset) {
        }
        List<Stray> strays = new ArrayList<>();
        for (List<String> chunk : InList.chunks(List.copyOf(completedLoadIds))) {
            try (PreparedStatement s = InList.prepare(c, "SELECT o.load_id, o.deployment_id, l.deployment_id, o.source_partition, o.source_offset "
                    + "FROM load_observations o " + ById.join("o", "load_id") + " WHERE o.load_id IN (%s) "
                    + "AND o.deployment_id <> l.deployment_id", chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    strays.add(new Stray(rs.getString(1), rs.getString(2), rs.getString(3), rs.getInt(4), rs.getLong(5)));
                }
            }
        }
        if (strays.isEmpty()) {
            return detached;
        }
        List<DeadLetterRows.Letter> letters = new ArrayList<>();
        try (PreparedStatement delete = c.prepareStatement("DELETE FROM load_observations WHERE load_id = ? AND deployment_id = ?")) {
            for (Stray stray : strays) {
                letters.add(new DeadLetterRows.Letter(observationsTopic, stray.partition(), stray.offset(), stray.loadId(),
                        DeadLetter.Reason.INVALID_CONTENT, DEPLOYMENT_MISMATCH, mismatch(stray.loadId(), stray.deployment(), stray.owner())));
                Sql.bind(delete, stray.loadId(), stray.deployment());
                delete.addBatch();
                detached.add(stray.loadId() + "/" + stray.deployment());
            }
            delete.executeBatch();
        }
        deadLetters.write(c, letters, now);
        return detached;
    }

    void writeDivergences(Connection c, Collection<Decoded.Summary> summaries) throws SQLException {
        PreparedStatement insert = null;
        try {
            for (Decoded.Summary summary : summaries) {
                LoadResolved l = summary.event();
                for (Divergence d : l.getDivergences()) {
                    if (insert == null) {
                        insert = c.prepareStatement(insertDivergence);
                    }
                    Sql.bind(insert, l.getLoadId().toString(), d.getTensorIndex(), Text.printable(d.getTensorName(), 1000), Text.printable(d.getRuntimeDomain(), 20),
                            d.getRuntimeResidentBytes(), Text.printable(d.getReferenceDomain(), 20), d.getReferenceResidentBytes(),
                            Text.printable(d.getReferenceReasonCode(), 40), Text.printable(d.getReferenceReason(), 2000));
                    insert.addBatch();
                }
            }
            if (insert != null) {
                insert.executeBatch();
            }
        } finally {
            if (insert != null) {
                insert.close();
            }
        }
    }
}
