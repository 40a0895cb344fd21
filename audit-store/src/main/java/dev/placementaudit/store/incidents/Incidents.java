package dev.placementaudit.store.incidents;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.placementaudit.store.db.Filter;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.plans.StoredPlans;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * What the store knows of its incidents (read side): the list, one incident with its deployments, acknowledgement,
 * and the release gate's verdict. Exposure is counted when asked, from the release heads: of the deployments whose
 * latest load of the model is on the incident's release, how many still show the cause.
 */
public final class Incidents {
    private Incidents() {
    }

    /** Who acknowledged a cause as expected, why, and until when (null: until withdrawn). */
    public record Ack(String by, Instant at, String note, Instant until) {
        public boolean activeAt(Instant now) {
            return until == null || until.isAfter(now);
        }

        /** {@code acknowledged by sre: JIRA-7 (until 2026-12-31T00:00:00Z)}, or {@code (ran out at ...)} once it has. */
        public String describe(Instant now) {
            return "acknowledged by " + by + ": " + note + (until == null ? "" : activeAt(now) ? " (until " + until + ")" : " (ran out at " + until + ")");
        }
    }

    /**
     * One incident as listed.
     *
     * @param showing     deployments whose latest load of the model still shows the cause
     * @param affected    deployments that ever showed it
     * @param onRelease   deployments whose latest load of the model is on {@code toRelease}: exposure's denominator
     * @param bytesMoved  bytes the cause moves, summed over the deployments showing it
     * @param offHeapDelta off-heap bytes it adds, summed over the deployments showing it
     */
    public record Incident(String incidentId, String state, String modelId, String fromRelease, String toRelease, String primaryKind,
                           List<String> kinds, String cause, int tensorCount, Instant firstSeen, Instant lastSeen, int showing, int affected,
                           int onRelease, long loads, long bytesMoved, long offHeapDelta, Ack acknowledged) {
        /** Showing out of on the release, 0 to 1 (0 when none is on it). */
        @JsonProperty("exposure")
        public double exposure() {
            return onRelease == 0 ? 0 : (double) showing / onRelease;
        }

        public boolean open() {
            return "OPEN".equals(state);
        }

        /** Open and not acknowledged (or its acknowledgement ran out): what pages someone and blocks a release. */
        public boolean paging(Instant now) {
            return open() && (acknowledged == null || !acknowledged.activeAt(now));
        }

        /** "37 of 100 deployments (37%)". */
        @JsonProperty("exposureText")
        public String exposureText() {
            return String.format(Locale.ROOT, "%d of %d deployment%s (%.0f%%)", showing, onRelease, onRelease == 1 ? "" : "s", exposure() * 100);
        }
    }

    /** A deployment's part in an incident ({@code leftSeen}: the time of the load that no longer showed it; null while showing). */
    public record Deployment(String deploymentId, boolean showing, int loads, long bytesMoved, long offHeapDelta, long heapDelta,
                             long mappedDelta, Instant firstSeen, Instant lastSeen, Instant leftSeen, String lastLoadId, String fromPlan, String toPlan) {
    }

    /** How many deployments showed the cause from {@code at} on (load times: a deployment joins when it first showed it, leaves at the load that no longer did). */
    public record ExposurePoint(Instant at, int showing) {
    }

    /**
     * One incident with its tensors (sorted by name), deployments (showing first, then by name) and exposure over time
     * (a step at each join or leave, out of {@code incident.onRelease()} on the release now).
     */
    public record Detail(Incident incident, String beforeDomain, String afterDomain, String beforeReason, String afterReason,
                         String beforeFormat, String afterFormat, List<String> tensors, List<Deployment> deployments,
                         List<ExposurePoint> exposureOverTime) {
    }

    private static final String LIST = "SELECT i.incident_id, i.state, i.model_id, i.from_release, i.to_release, i.primary_kind, i.kinds, i.cause, "
            + "i.tensor_count, i.first_seen, i.last_seen, a.acknowledged_by, a.acknowledged_at, a.note, a.until_time, "
            // Its totals over its deployments, kept on it where its state is settled (V28, IncidentLedger.settle).
            + "i.showing_deployments AS showing, i.affected_deployments AS affected, i.affected_loads AS loads, "
            + "i.showing_bytes_moved AS bytes_moved, i.showing_offheap_delta AS offheap_delta "
            + "FROM incidents i LEFT JOIN incident_acks a ON a.incident_id = i.incident_id";

    /**
     * Deployments whose latest load of a model (in log order) is on a release: the loads marked their deployment's latest
     * (V29, kept by ingestion), counted by the index of those marks, rather than each head of the release checked for a
     * later one (a probe a head, and on PostgreSQL a probe a month: 64 ms a release at 1.2 million loads).
     */
    private static final String ON_RELEASE = "SELECT COUNT(*) FROM load_rows WHERE is_latest = TRUE AND model_id = ? AND release_name = ?";

    /**
     * Incidents, open ones first, then the most recently seen; each filter optional.
     *
     * @param openOnly only those still shown by a deployment
     */
    public static List<Incident> list(Connection c, boolean openOnly, String release, String model) throws SQLException {
        return list(c, openOnly, release, model, Integer.MAX_VALUE);
    }

    /**
     * The first {@code most} of them in that order. The order and the limit are the database's, so that the sums over
     * each incident's deployments and its exposure's denominator are read for those shown only (a year of releases
     * holds hundreds of incidents, a thousand deployments each).
     */
    public static List<Incident> list(Connection c, boolean openOnly, String release, String model, int most) throws SQLException {
        Filter filter = new Filter().when(openOnly, "i.state = 'OPEN'").equal("i.to_release", release).equal("i.model_id", model);
        List<Incident> incidents = new ArrayList<>();
        String order = " ORDER BY CASE WHEN i.state = 'OPEN' THEN 0 ELSE 1 END, i.last_seen DESC, i.incident_id"
                + (most == Integer.MAX_VALUE ? "" : " FETCH FIRST " + Math.max(0, most) + " ROWS ONLY");
        List<Incident> listed = Sql.list(c, LIST + filter.where() + order, Incidents::incident, filter.args());
        Map<List<String>, Integer> onRelease = onRelease(c, listed);
        for (Incident i : listed) {
            incidents.add(withOnRelease(i, onRelease.getOrDefault(List.of(i.modelId(), i.toRelease()), 0)));
        }
        incidents.sort(Comparator.comparing((Incident i) -> !i.open()).thenComparing(Incident::lastSeen, Comparator.reverseOrder())
                .thenComparing(Incident::incidentId));
        return incidents;
    }

    /**
     * The open incidents no live acknowledgement covers, without their exposure's denominator (which reads the release
     * heads): what the metrics read every few seconds on the ingest thread, cheap whatever the fleet's size.
     */
    public static List<Incident> paging(Connection c, Instant now) throws SQLException {
        return Sql.list(c, LIST + " WHERE i.state = 'OPEN' AND (a.incident_id IS NULL OR (a.until_time IS NOT NULL AND a.until_time <= ?)) "
                + "ORDER BY i.incident_id", Incidents::incident, Timestamp.from(now));
    }

    /** The incident with this id, or the one whose id starts with it (an error names the candidates when several do). */
    public static Optional<Detail> find(Connection c, String idOrPrefix) throws SQLException {
        String id = resolve(c, idOrPrefix).orElse(null);
        if (id == null) {
            return Optional.empty();
        }
        Incident incident = Sql.first(c, LIST + " WHERE i.incident_id = ?", Incidents::incident, id).orElseThrow();
        incident = withOnRelease(incident, onRelease(c, incident.modelId(), incident.toRelease()));
        Detail detail = Sql.first(c, "SELECT before_domain, after_domain, before_reason, after_reason, before_format, after_format, tensors "
                + "FROM incidents WHERE incident_id = ?", rs -> new Detail(null, rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4),
                rs.getString(5), rs.getString(6), Arrays.asList(rs.getString(7).split("\n")), List.of(), List.of()), id).orElseThrow();
        List<Deployment> deployments = Sql.list(c, "SELECT deployment_id, showing, loads, bytes_moved, offheap_delta, heap_delta, mapped_delta, "
                + "first_seen, last_seen, left_seen, last_load_id, from_plan, to_plan FROM incident_deployments WHERE incident_id = ? "
                + "ORDER BY showing DESC, deployment_id", rs -> new Deployment(rs.getString(1), rs.getBoolean(2), rs.getInt(3), rs.getLong(4),
                rs.getLong(5), rs.getLong(6), rs.getLong(7), Sql.instant(rs, 8), Sql.instant(rs, 9),
                rs.getTimestamp(10) == null ? null : rs.getTimestamp(10).toInstant(), rs.getString(11), StoredPlans.hex(rs.getBytes(12)),
                StoredPlans.hex(rs.getBytes(13))), id);
        return Optional.of(new Detail(incident, detail.beforeDomain(), detail.afterDomain(), detail.beforeReason(), detail.afterReason(),
                detail.beforeFormat(), detail.afterFormat(), detail.tensors(), deployments, overTime(deployments)));
    }

    /** A step at every join and leave, in time order; joins and leaves at the same time make one step. */
    static List<ExposurePoint> overTime(List<Deployment> deployments) {
        TreeMap<Instant, Integer> steps = new TreeMap<>();
        for (Deployment d : deployments) {
            steps.merge(d.firstSeen(), 1, Integer::sum);
            if (!d.showing() && d.leftSeen() != null) {
                steps.merge(d.leftSeen(), -1, Integer::sum);
            }
        }
        List<ExposurePoint> points = new ArrayList<>();
        int showing = 0;
        for (Map.Entry<Instant, Integer> step : steps.entrySet()) {
            showing += step.getValue();
            points.add(new ExposurePoint(step.getKey(), Math.max(0, showing)));
        }
        return points;
    }

    /**
     * The full id of the incident named by an id or a prefix of one.
     *
     * @throws IllegalArgumentException when the prefix names several
     */
    public static Optional<String> resolve(Connection c, String idOrPrefix) throws SQLException {
        List<String> ids = Sql.list(c, "SELECT incident_id FROM incidents WHERE incident_id LIKE ? ORDER BY incident_id FETCH FIRST 6 ROWS ONLY",
                rs -> rs.getString(1), idOrPrefix.replace("%", "").replace("_", "\\_") + "%");
        if (ids.contains(idOrPrefix) || ids.size() == 1) {
            return ids.contains(idOrPrefix) ? Optional.of(idOrPrefix) : Optional.of(ids.get(0));
        }
        if (ids.size() > 1) {
            throw new IllegalArgumentException("'" + idOrPrefix + "' names several incidents (" + String.join(", ", ids.subList(0, Math.min(5, ids.size())))
                    + (ids.size() > 5 ? ", ..." : "") + "): give more of the id");
        }
        return Optional.empty();
    }

    /** Marks an incident's cause as expected fleet-wide (replacing an earlier acknowledgement). */
    public static void acknowledge(Connection c, String upsert, String incidentId, String by, String note, Instant until, Instant now)
            throws SQLException {
        Sql.update(c, upsert, incidentId, by, Timestamp.from(now), note, until == null ? null : Timestamp.from(until));
        // A material change: placement-alerts says the cause is acknowledged with the incident's next update.
        Sql.update(c, "UPDATE incidents SET version = version + 1, updated_at = ? WHERE incident_id = ?", Timestamp.from(now), incidentId);
    }

    private static Incident incident(ResultSet rs) throws SQLException {
        String by = rs.getString("acknowledged_by");
        Ack ack = by == null ? null : new Ack(by, Sql.instant(rs, rs.findColumn("acknowledged_at")), rs.getString("note"),
                rs.getTimestamp("until_time") == null ? null : rs.getTimestamp("until_time").toInstant());
        String kinds = rs.getString("kinds");
        return new Incident(rs.getString("incident_id"), rs.getString("state"), rs.getString("model_id"), rs.getString("from_release"),
                rs.getString("to_release"), rs.getString("primary_kind"), kinds.isEmpty() ? List.of() : List.of(kinds.split(",")),
                rs.getString("cause"), rs.getInt("tensor_count"), rs.getTimestamp("first_seen").toInstant(), rs.getTimestamp("last_seen").toInstant(),
                rs.getInt("showing"), rs.getInt("affected"), 0, rs.getLong("loads"), rs.getLong("bytes_moved"), rs.getLong("offheap_delta"), ack);
    }

    private static Incident withOnRelease(Incident i, int onRelease) {
        return new Incident(i.incidentId(), i.state(), i.modelId(), i.fromRelease(), i.toRelease(), i.primaryKind(), i.kinds(), i.cause(),
                i.tensorCount(), i.firstSeen(), i.lastSeen(), i.showing(), i.affected(), Math.max(onRelease, i.showing()), i.loads(), i.bytesMoved(),
                i.offHeapDelta(), i.acknowledged());
    }

    /**
     * {@link #onRelease(Connection, String, String)} for every model and release of these incidents, in one query (a
     * statement each was planned anew, one per month: 47 ms for the 40 incidents of 3.1 million loads).
     */
    private static Map<List<String>, Integer> onRelease(Connection c, List<Incident> incidents) throws SQLException {
        Map<List<String>, Integer> counts = new HashMap<>();
        if (incidents.isEmpty()) {
            return counts;
        }
        List<String> models = incidents.stream().map(Incident::modelId).distinct().toList();
        List<String> releases = incidents.stream().map(Incident::toRelease).distinct().toList();
        List<Object> args = new ArrayList<>(models);
        args.addAll(releases);
        for (Map.Entry<List<String>, Integer> count : Sql.list(c, "SELECT model_id, release_name, COUNT(*) FROM load_rows WHERE is_latest = TRUE "
                + "AND model_id IN (" + String.join(", ", Collections.nCopies(models.size(), "?")) + ") AND release_name IN ("
                + String.join(", ", Collections.nCopies(releases.size(), "?")) + ") GROUP BY model_id, release_name",
                rs -> Map.entry(List.of(rs.getString(1), rs.getString(2)), rs.getInt(3)), args.toArray())) {
            counts.put(count.getKey(), count.getValue());
        }
        return counts;
    }

    /** How many deployments run {@code release} of {@code model} now: their latest load of it is on it. */
    public static int onRelease(Connection c, String model, String release) throws SQLException {
        return (int) Sql.number(c, ON_RELEASE, model, release);
    }
}
