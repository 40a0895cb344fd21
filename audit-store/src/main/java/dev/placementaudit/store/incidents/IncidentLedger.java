package dev.placementaudit.store.incidents;

import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.plans.PlanCache;
import dev.placementaudit.store.plans.StoredPlans;
import dev.placementaudit.store.regression.Detection;
import dev.placementaudit.store.regression.FindingKind;
import dev.placementaudit.store.regression.LoadRef;
import dev.placementaudit.store.regression.ReleaseDiff;
import dev.placementaudit.store.regression.RootCauses;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Keeps the incidents in the ingesting transaction, from the loads a batch completes and their detections: a load
 * that shows a cause opens its incident (or joins it), a deployment whose latest load of the model no longer shows it
 * leaves it, and an incident no deployment shows any more is resolved (reopened if one shows it again).
 *
 * <p>Exactly once across store instances: a deployment's rows are written only under its deployment lock, which the
 * batch holds; but an incident spans deployments that other instances ingest at the same time, so before touching an
 * incident's deployments the batch locks the incident's row ({@code SELECT ... FOR UPDATE}, in id order, so two
 * batches never wait on each other in a cycle), and its state is then computed from every deployment's committed row.
 * Everything kept is a function of each deployment's loads in log order, so a rebuild from the log writes the same
 * rows whatever the interleaving of deployments (docs/incidents.md).
 */
public final class IncidentLedger {
    static final List<String> INCIDENT_COLUMNS = List.of("incident_id", "model_id", "from_release", "to_release", "primary_kind",
            "kinds", "cause", "before_domain", "after_domain", "before_reason", "after_reason", "before_format", "after_format", "tensor_count",
            "tensors_digest", "tensors", "state", "first_seen", "last_seen", "version", "updated_at");
    static final List<String> INCIDENT_TYPES = List.of("VARCHAR(40)", "VARCHAR(200)", "VARCHAR(200)", "VARCHAR(200)",
            "VARCHAR(30)", "VARCHAR(200)", "VARCHAR(2000)", "VARCHAR(20)", "VARCHAR(20)", "VARCHAR(500)", "VARCHAR(500)", "VARCHAR(150)",
            "VARCHAR(150)", "INTEGER", "VARCHAR(64)", "VARCHAR(65535)", "VARCHAR(10)", "TIMESTAMP WITH TIME ZONE",
            "TIMESTAMP WITH TIME ZONE", "BIGINT", "TIMESTAMP WITH TIME ZONE");
    static final List<String> DEPLOYMENT_COLUMNS = List.of("incident_id", "deployment_id", "model_id", "showing", "loads",
            "bytes_moved", "offheap_delta", "heap_delta", "mapped_delta", "first_seen", "last_seen", "left_seen", "last_load_id", "from_plan",
            "to_plan");
    static final List<String> DEPLOYMENT_TYPES = List.of("VARCHAR(40)", "VARCHAR(200)", "VARCHAR(200)", "BOOLEAN", "INTEGER",
            "BIGINT", "BIGINT", "BIGINT", "BIGINT", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITH TIME ZONE",
            "VARCHAR(36)", "BYTEA", "BYTEA");
    /** The most tensor names an incident row lists (the digest covers them all). */
    private static final int TENSOR_TEXT_LIMIT = 60_000;

    private final String insertIncident;
    private final String upsertDeployment;
    /** The causes of a transition (model, releases, pair of plans): they depend on nothing else, and a fleet repeats few. */
    private final Map<String, List<Cause>> causes = PlanCache.lru(256);

    public IncidentLedger(Dialect dialect) {
        this.insertIncident = dialect.insertIgnoringDuplicates("incidents", INCIDENT_COLUMNS, INCIDENT_TYPES, "incident_id");
        this.upsertDeployment = dialect.upsert("incident_deployments", DEPLOYMENT_COLUMNS, DEPLOYMENT_TYPES,
                List.of("incident_id", "deployment_id"));
    }

    public enum State { OPEN, RESOLVED }

    /** An incident this batch opened, resolved or reopened ({@code before} null: opened). */
    public record Change(String incidentId, String modelId, String fromRelease, String toRelease, String cause, State before, State after,
                         int showing) {
    }

    /**
     * Records what these loads, completed in this batch in log order per deployment, show.
     *
     * @param detections each load's comparison with its predecessor, by load id (none for a load without one: it shows
     *                   no cause, and its deployment leaves the incidents its earlier loads showed)
     * @return the incidents whose state this batch changed, in id order
     */
    public List<Change> record(Connection c, List<LoadRef> completed, Map<String, Detection> detections, Instant now) throws SQLException {
        if (completed.isEmpty()) {
            return List.of();
        }
        Map<List<String>, List<Affected>> byModel = read(c, completed);
        Map<String, Cause> shownCauses = new TreeMap<>();
        Map<String, Set<FindingKind>> kinds = new HashMap<>();
        Set<String> material = new TreeSet<>();
        List<Affected> dirty = new ArrayList<>();
        for (LoadRef load : completed) {
            Detection d = detections.get(load.loadId());
            List<Cause> shown = d == null ? List.of() : causes(d);
            Set<String> ids = shown.stream().map(Cause::incidentId).collect(Collectors.toSet());
            List<Affected> rows = byModel.computeIfAbsent(List.of(load.deploymentId(), load.modelId()), k -> new ArrayList<>());
            for (Affected a : rows) {
                if (a.showing && !ids.contains(a.incidentId)) {
                    a.showing = false;
                    a.leftSeen = load.occurredAt();
                    mark(a, dirty, material);
                }
            }
            for (Cause cause : shown) {
                Affected a = rows.stream().filter(r -> r.incidentId.equals(cause.incidentId())).findFirst().orElse(null);
                if (a == null) {
                    a = new Affected(cause.incidentId(), load.deploymentId(), load.modelId(), load.occurredAt());
                    rows.add(a);
                    material.add(a.incidentId);
                } else if (!a.showing) {
                    material.add(a.incidentId);
                }
                a.showing = true;
                a.leftSeen = null;
                a.loads++;
                RootCauses.CauseGroup g = cause.group();
                a.bytesMoved = g.bytesMoved();
                a.offHeapDelta = g.deltaBytesByDomain().getOrDefault(ReleaseDiff.OFFHEAP, 0L);
                a.heapDelta = g.deltaBytesByDomain().getOrDefault(ReleaseDiff.HEAP, 0L);
                a.mappedDelta = g.deltaBytesByDomain().getOrDefault(ReleaseDiff.MMAP, 0L);
                a.firstSeen = a.firstSeen.isBefore(load.occurredAt()) ? a.firstSeen : load.occurredAt();
                a.lastSeen = a.lastSeen.isAfter(load.occurredAt()) ? a.lastSeen : load.occurredAt();
                a.lastLoadId = load.loadId();
                a.fromPlan = d.previous().planDigest();
                a.toPlan = load.planDigest();
                mark(a, dirty, material);
                shownCauses.putIfAbsent(cause.incidentId(), cause);
                kinds.computeIfAbsent(cause.incidentId(), k -> EnumSet.noneOf(FindingKind.class)).addAll(cause.kinds());
            }
        }
        if (dirty.isEmpty()) {
            return List.of();
        }
        Set<String> touched = new TreeSet<>(shownCauses.keySet());
        dirty.forEach(a -> touched.add(a.incidentId));
        insertNew(c, shownCauses, dirty, now);
        Map<String, Stored> stored = lock(c, touched);
        writeDeployments(c, dirty);
        return settle(c, touched, stored, kinds, material, now);
    }

    private List<Cause> causes(Detection d) {
        String key = d.previous().planDigest() == null || d.load().planDigest() == null ? null : String.join("\0", d.load().modelId(),
                d.previous().release(), d.load().release(), d.previous().planDigest(), d.load().planDigest());
        List<Cause> known = key == null ? null : causes.get(key);
        if (known == null) {
            known = Cause.of(d);
            if (key != null) {
                causes.put(key, known);
            }
        }
        return known;
    }

    private static void mark(Affected a, List<Affected> dirty, Set<String> material) {
        if (!a.dirty) {
            a.dirty = true;
            dirty.add(a);
        }
        if (!a.showing) {
            material.add(a.incidentId);
        }
    }

    /** Every incident row of the deployments and models these loads are of. */
    private static Map<List<String>, List<Affected>> read(Connection c, List<LoadRef> completed) throws SQLException {
        Set<String> deployments = new LinkedHashSet<>();
        completed.forEach(load -> deployments.add(load.deploymentId()));
        Map<List<String>, List<Affected>> byModel = new HashMap<>();
        for (List<String> chunk : InList.chunks(deployments)) {
            try (PreparedStatement s = InList.prepare(c, "SELECT " + String.join(", ", DEPLOYMENT_COLUMNS)
                    + " FROM incident_deployments WHERE deployment_id IN (%s) AND incident_id NOT LIKE '" + RuntimeIncidents.ID_PREFIX + "%%'", chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    Affected a = new Affected(rs.getString("incident_id"), rs.getString("deployment_id"), rs.getString("model_id"),
                            rs.getTimestamp("first_seen").toInstant());
                    a.showing = rs.getBoolean("showing");
                    a.loads = rs.getInt("loads");
                    a.bytesMoved = rs.getLong("bytes_moved");
                    a.offHeapDelta = rs.getLong("offheap_delta");
                    a.heapDelta = rs.getLong("heap_delta");
                    a.mappedDelta = rs.getLong("mapped_delta");
                    a.lastSeen = rs.getTimestamp("last_seen").toInstant();
                    a.leftSeen = rs.getTimestamp("left_seen") == null ? null : rs.getTimestamp("left_seen").toInstant();
                    a.lastLoadId = rs.getString("last_load_id");
                    a.fromPlan = StoredPlans.hex(rs.getBytes("from_plan"));
                    a.toPlan = StoredPlans.hex(rs.getBytes("to_plan"));
                    byModel.computeIfAbsent(List.of(a.deploymentId, a.modelId), k -> new ArrayList<>()).add(a);
                }
            }
        }
        return byModel;
    }

    /** The incidents these causes name, inserted unless another batch (or instance) already did, in id order. */
    private void insertNew(Connection c, Map<String, Cause> shown, List<Affected> dirty, Instant now) throws SQLException {
        if (shown.isEmpty()) {
            return;
        }
        Map<String, Instant> seen = new HashMap<>();
        dirty.forEach(a -> seen.merge(a.incidentId, a.firstSeen, (x, y) -> x.isBefore(y) ? x : y));
        try (PreparedStatement insert = c.prepareStatement(insertIncident)) {
            for (Cause cause : shown.values()) {
                RootCauses.CauseGroup g = cause.group();
                Timestamp first = Timestamp.from(seen.getOrDefault(cause.incidentId(), now));
                Sql.bind(insert, cause.incidentId(), cause.modelId(), cause.fromRelease(), cause.toRelease(), Cause.primary(cause.kinds()).name(),
                        kindsText(cause.kinds()), truncate(g.cause(), 2000), g.beforeDomain(), g.afterDomain(), truncate(g.beforeReason(), 500),
                        truncate(g.afterReason(), 500), g.beforeFormat(), g.afterFormat(), g.tensorCount(), cause.tensorsDigest(), tensorText(g),
                        State.OPEN.name(), first, first, 0L, Timestamp.from(now));
                insert.addBatch();
            }
            insert.executeBatch();
        }
    }

    record Stored(State state, Set<FindingKind> kinds, long version) {
    }

    /** Locks the incidents' rows in id order: the one point where batches of different deployments meet. */
    static Map<String, Stored> lock(Connection c, Set<String> ids) throws SQLException {
        Map<String, Stored> stored = new HashMap<>();
        for (List<String> chunk : InList.chunks(ids)) {
            try (PreparedStatement s = InList.prepare(c, "SELECT incident_id, state, kinds, version FROM incidents WHERE incident_id IN (%s) "
                    + "ORDER BY incident_id FOR UPDATE", chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    stored.put(rs.getString(1), new Stored(State.valueOf(rs.getString(2)), parseKinds(rs.getString(3)), rs.getLong(4)));
                }
            }
        }
        return stored;
    }

    private void writeDeployments(Connection c, List<Affected> dirty) throws SQLException {
        try (PreparedStatement upsert = c.prepareStatement(upsertDeployment)) {
            for (Affected a : dirty) {
                Sql.bind(upsert, a.incidentId, a.deploymentId, a.modelId, a.showing, a.loads, a.bytesMoved, a.offHeapDelta, a.heapDelta,
                        a.mappedDelta, Timestamp.from(a.firstSeen), Timestamp.from(a.lastSeen), a.leftSeen == null ? null : Timestamp.from(a.leftSeen),
                        a.lastLoadId, StoredPlans.bytes(a.fromPlan), StoredPlans.bytes(a.toPlan));
                upsert.addBatch();
            }
            upsert.executeBatch();
        }
    }

    /** Each touched incident's state, times and kinds from all its deployments' committed rows and this batch's. */
    static List<Change> settle(Connection c, Set<String> touched, Map<String, Stored> stored, Map<String, Set<FindingKind>> kinds,
                                       Set<String> material, Instant now) throws SQLException {
        List<Change> changes = new ArrayList<>();
        for (List<String> chunk : InList.chunks(touched)) {
            Map<String, Object[]> totals = new HashMap<>();
            // With the totals the incidents list and the gate show, kept on the incident (V28) rather than summed on each read.
            try (PreparedStatement s = InList.prepare(c, "SELECT incident_id, SUM(CASE WHEN showing THEN 1 ELSE 0 END), MIN(first_seen), "
                    + "MAX(last_seen), COUNT(*), COALESCE(SUM(loads), 0), COALESCE(SUM(CASE WHEN showing THEN bytes_moved ELSE 0 END), 0), "
                    + "COALESCE(SUM(CASE WHEN showing THEN offheap_delta ELSE 0 END), 0) FROM incident_deployments WHERE incident_id IN (%s) "
                    + "GROUP BY incident_id", chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    totals.put(rs.getString(1), new Object[]{rs.getInt(2), rs.getTimestamp(3), rs.getTimestamp(4), rs.getInt(5), rs.getLong(6),
                            rs.getLong(7), rs.getLong(8)});
                }
            }
            try (PreparedStatement update = c.prepareStatement("UPDATE incidents SET state = ?, primary_kind = ?, kinds = ?, first_seen = ?, "
                    + "last_seen = ?, version = ?, updated_at = CASE WHEN version = ? THEN updated_at ELSE CAST(? AS TIMESTAMP WITH TIME ZONE) END, "
                    + "showing_deployments = ?, affected_deployments = ?, affected_loads = ?, showing_bytes_moved = ?, showing_offheap_delta = ? "
                    + "WHERE incident_id = ?")) {
                for (String id : chunk) {
                    Stored was = stored.get(id);
                    Object[] total = totals.get(id);
                    int showing = (Integer) total[0];
                    State state = showing > 0 ? State.OPEN : State.RESOLVED;
                    Set<FindingKind> all = EnumSet.noneOf(FindingKind.class);
                    all.addAll(was.kinds());
                    all.addAll(kinds.getOrDefault(id, Set.of()));
                    boolean fresh = was.version() == 0 && kinds.containsKey(id);
                    long version = was.version() + (material.contains(id) || fresh ? 1 : 0);
                    Sql.bind(update, state.name(), Cause.primary(all).name(), kindsText(all), total[1], total[2], version, version,
                            Timestamp.from(now), showing, total[3], total[4], total[5], total[6], id);
                    update.addBatch();
                    if (was.version() == 0 || was.state() != state) {
                        changes.add(describe(c, id, was.version() == 0 ? null : was.state(), state, showing));
                    }
                }
                update.executeBatch();
            }
        }
        return changes;
    }

    private static Change describe(Connection c, String id, State before, State after, int showing) throws SQLException {
        return Sql.first(c, "SELECT model_id, from_release, to_release, cause FROM incidents WHERE incident_id = ?",
                rs -> new Change(id, rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), before, after, showing), id).orElseThrow();
    }

    static String kindsText(Set<FindingKind> kinds) {
        return kinds.stream().sorted().map(Enum::name).collect(Collectors.joining(","));
    }

    static Set<FindingKind> parseKinds(String text) {
        Set<FindingKind> kinds = EnumSet.noneOf(FindingKind.class);
        if (text != null && !text.isEmpty()) {
            Arrays.stream(text.split(",")).map(FindingKind::valueOf).forEach(kinds::add);
        }
        return kinds;
    }

    static String tensorText(RootCauses.CauseGroup g) {
        StringBuilder text = new StringBuilder();
        List<String> names = g.tensors().stream().map(RootCauses.TensorChange::name).sorted().toList();
        for (int i = 0; i < names.size(); i++) {
            if (text.length() + names.get(i).length() + 1 > TENSOR_TEXT_LIMIT) {
                return text.append("... (+").append(names.size() - i).append(" more)").toString();
            }
            text.append(i == 0 ? "" : "\n").append(names.get(i));
        }
        return text.toString();
    }

    static String truncate(String text, int limit) {
        return text == null || text.length() <= limit ? text : text.substring(0, limit - 3) + "...";
    }

    /** A deployment's row of an incident, as read and as this batch leaves it. */
    private static final class Affected {
        final String incidentId;
        final String deploymentId;
        final String modelId;
        boolean showing;
        int loads;
        long bytesMoved;
        long offHeapDelta;
        long heapDelta;
        long mappedDelta;
        Instant firstSeen;
        Instant lastSeen;
        Instant leftSeen;
        String lastLoadId;
        String fromPlan;
        String toPlan;
        boolean dirty;

        Affected(String incidentId, String deploymentId, String modelId, Instant seen) {
            this.incidentId = incidentId;
            this.deploymentId = deploymentId;
            this.modelId = modelId;
            this.firstSeen = seen;
            this.lastSeen = seen;
        }
    }
}
