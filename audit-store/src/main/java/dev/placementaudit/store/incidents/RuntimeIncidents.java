package dev.placementaudit.store.incidents;

import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.regression.FindingKind;
import dev.placementaudit.store.regression.GrowthRule;
import dev.placementaudit.store.regression.LoadRef;
import dev.placementaudit.store.regression.RegressionDetector;
import dev.placementaudit.store.regression.RootCauses;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Incidents from what runtimes did rather than what the reference plans (docs/observations.md): a load whose runtime
 * placed tensors otherwise ({@code DIVERGED}), held more off-heap than planned ({@code UNPLANNED_OFFHEAP}) or did not
 * map what the plan maps ({@code MAPPING_NOT_OBSERVED}).
 *
 * <p>A load's findings are drawn once it is complete <em>and</em> what its runtime said of it is in (its summary's
 * divergences, its observation), whichever came last, and are a function of those alone ({@link RuntimeFindings}). A
 * deployment's rows of these incidents are then derived afresh from all its findings and its loads' order: showing while
 * its latest load of the model shows the cause, its loads, first and last seen, and when it left. So the rows are the same whatever order the
 * load, its summary and its observation arrived in, and a rebuild from the log writes them alike. Observations are
 * written under their deployment's lock, like loads, so the second of a load and its observation to commit sees the
 * first. The incident rows themselves are kept as for every incident ({@link IncidentLedger}): inserted if new, locked
 * in id order, their state settled from every deployment's committed row.
 */
public final class RuntimeIncidents {
    /** What every id of these incidents starts with: a regression's id is hexadecimal after {@code inc-}, never an r. */
    public static final String ID_PREFIX = "inc-r";
    private static final List<String> FINDING_COLUMNS = List.of("load_id", "incident_id", "kind", "deployment_id", "model_id", "bytes_moved",
            "offheap_delta", "heap_delta", "mapped_delta");
    private static final List<String> FINDING_TYPES = List.of("VARCHAR(36)", "VARCHAR(40)", "VARCHAR(30)", "VARCHAR(200)", "VARCHAR(200)",
            "BIGINT", "BIGINT", "BIGINT", "BIGINT");

    private final String insertIncident;
    private final String insertFinding;
    private final String upsertDeployment;
    private final RuntimeFindings findings;

    public RuntimeIncidents(Dialect dialect, GrowthRule unplannedOffHeap) {
        this.insertIncident = dialect.insertIgnoringDuplicates("incidents", IncidentLedger.INCIDENT_COLUMNS, IncidentLedger.INCIDENT_TYPES,
                "incident_id");
        this.insertFinding = dialect.insertIgnoringDuplicates("runtime_findings", FINDING_COLUMNS, FINDING_TYPES, List.of("load_id", "incident_id"));
        this.upsertDeployment = dialect.upsert("incident_deployments", IncidentLedger.DEPLOYMENT_COLUMNS, IncidentLedger.DEPLOYMENT_TYPES,
                List.of("incident_id", "deployment_id"));
        this.findings = new RuntimeFindings(unplannedOffHeap);
    }

    /**
     * Draws the findings of these loads (those complete; the others wait for their completion), then keeps the runtime
     * incidents of the deployments whose rows may have changed: those with a new finding, and those showing one whose
     * model had a load complete now (it may no longer show it). A deployment with neither keeps its rows as they are.
     *
     * @param completed the loads this batch completed, in log order per deployment
     * @param observed  the loads whose observation came in this batch (complete now, before, or not yet)
     */
    public Result record(Connection c, List<LoadRef> completed, Collection<String> observed, Instant now) throws SQLException {
        Set<String> loadIds = new TreeSet<>(observed);
        completed.forEach(load -> loadIds.add(load.loadId()));
        if (loadIds.isEmpty()) {
            return Result.NONE;
        }
        Map<String, RuntimeFindings.Load> loads = RuntimeFindings.completeLoads(c, loadIds);
        if (loads.isEmpty()) {
            return Result.NONE;
        }
        Map<String, RuntimeFindings.Observed> observations = RuntimeFindings.observations(c, loads.keySet());
        List<ObservedLoad> seen = new ArrayList<>();
        observations.forEach((id, o) -> {
            RuntimeFindings.Load load = loads.get(id);
            seen.add(new ObservedLoad(load.ref(), load.heapBytes(), load.offHeapBytes(), load.mappedBytes(), o.heap(), o.offHeap(), o.mapped()));
        });
        Map<String, List<RootCauses.TensorChange>> diverged = RuntimeFindings.divergences(c, loads.keySet());
        Map<String, RuntimeFindings.Finding> shown = new TreeMap<>();
        Map<String, Instant> firstSeen = new HashMap<>();
        Map<String, RuntimeFindings.Load> origin = new HashMap<>();
        Set<List<String>> pairs = new TreeSet<>(PAIR_ORDER);
        try (PreparedStatement insert = c.prepareStatement(insertFinding)) {
            boolean any = false;
            for (RuntimeFindings.Load load : loads.values()) {
                for (RuntimeFindings.Finding f : findings.of(load, observations.get(load.ref().loadId()), diverged.getOrDefault(load.ref().loadId(), List.of()))) {
                    Sql.bind(insert, load.ref().loadId(), f.incidentId(), f.kind().name(), load.ref().deploymentId(), load.ref().modelId(),
                            f.group().bytesMoved(), f.offHeapDelta(), f.heapDelta(), f.mappedDelta());
                    insert.addBatch();
                    any = true;
                    shown.putIfAbsent(f.incidentId(), f);
                    origin.putIfAbsent(f.incidentId(), load);
                    firstSeen.merge(f.incidentId(), load.ref().occurredAt(), (a, b) -> a.isBefore(b) ? a : b);
                    pairs.add(List.of(load.ref().deploymentId(), load.ref().modelId()));
                }
            }
            if (any) {
                insert.executeBatch();
            }
        }
        // Each model's latest load, where one completed now: loads complete in log order, so none complete before is later.
        Map<List<String>, LoadRef> latest = new HashMap<>();
        completed.forEach(load -> latest.merge(List.of(load.deploymentId(), load.modelId()), load,
                (a, b) -> LoadRef.IN_LOG_ORDER.compare(a, b) >= 0 ? a : b));
        pairs.addAll(showing(c, latest.keySet()));
        if (pairs.isEmpty()) {
            return new Result(List.of(), seen);
        }
        Map<List<String>, List<Row>> findings = findingsOf(c, pairs);
        if (findings.isEmpty()) {
            return new Result(List.of(), seen);
        }
        insertNew(c, shown, firstSeen, origin, now);
        List<Derived> derived = new ArrayList<>();
        Map<String, Set<FindingKind>> kinds = new HashMap<>();
        for (Map.Entry<List<String>, List<Row>> pair : findings.entrySet()) {
            derived.addAll(derive(c, pair.getKey().get(0), pair.getKey().get(1), pair.getValue(), latest.get(pair.getKey())));
            pair.getValue().forEach(r -> kinds.computeIfAbsent(r.incidentId, k -> EnumSet.noneOf(FindingKind.class)).add(r.kind));
        }
        Set<String> touched = new TreeSet<>();
        derived.forEach(d -> touched.add(d.incidentId));
        Map<String, IncidentLedger.Stored> stored = IncidentLedger.lock(c, touched);
        Set<String> material = write(c, derived);
        return new Result(IncidentLedger.settle(c, touched, stored, kinds, material, now), seen);
    }

    private static final Comparator<List<String>> PAIR_ORDER = (a, b) -> a.get(0).equals(b.get(0)) ? a.get(1).compareTo(b.get(1))
            : a.get(0).compareTo(b.get(0));

    /** Of these deployments and models, those showing a runtime incident now. */
    private static Set<List<String>> showing(Connection c, Set<List<String>> pairs) throws SQLException {
        Set<List<String>> out = new TreeSet<>(PAIR_ORDER);
        Set<String> deployments = new TreeSet<>();
        pairs.forEach(p -> deployments.add(p.get(0)));
        for (List<String> chunk : InList.chunks(deployments)) {
            try (PreparedStatement s = InList.prepare(c, "SELECT deployment_id, model_id FROM incident_deployments WHERE deployment_id IN (%s) "
                    + "AND showing = TRUE AND incident_id LIKE '" + ID_PREFIX + "%%'", chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    List<String> pair = List.of(rs.getString(1), rs.getString(2));
                    if (pairs.contains(pair)) {
                        out.add(pair);
                    }
                }
            }
        }
        return out;
    }

    /**
     * @param changes  the incidents whose state this changed, in id order
     * @param observed the complete loads looked at that have an observation: planned beside observed, for the gauges
     */
    public record Result(List<IncidentLedger.Change> changes, List<ObservedLoad> observed) {
        static final Result NONE = new Result(List.of(), List.of());
    }

    /** A complete load's plan per domain beside what its runtime observed (null where it did not measure). */
    public record ObservedLoad(LoadRef load, long plannedHeap, long plannedOffHeap, long plannedMapped, Long heap, Long offHeap, Long mapped) {
    }

    /** A finding as stored, with where its load stands. */
    private record Row(String incidentId, FindingKind kind, LoadRef load, long bytesMoved, long offHeapDelta, long heapDelta, long mappedDelta) {
    }

    /** Every runtime finding of these deployments and models, each deployment's in log order. */
    private static Map<List<String>, List<Row>> findingsOf(Connection c, Set<List<String>> pairs) throws SQLException {
        Set<String> deployments = new TreeSet<>();
        pairs.forEach(p -> deployments.add(p.get(0)));
        Map<List<String>, List<Row>> out = new LinkedHashMap<>();
        for (List<String> chunk : InList.chunks(deployments)) {
            try (PreparedStatement s = InList.prepare(c, "SELECT f.incident_id, f.kind, f.bytes_moved, f.offheap_delta, f.heap_delta, f.mapped_delta, l."
                    + LoadRef.COLUMNS.replace(", ", ", l.") + " FROM runtime_findings f JOIN loads l ON l.load_id = f.load_id "
                    + "WHERE f.deployment_id IN (%s)", chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    LoadRef load = RegressionDetector.ref(rs);
                    if (pairs.contains(List.of(load.deploymentId(), load.modelId()))) {
                        out.computeIfAbsent(List.of(load.deploymentId(), load.modelId()), k -> new ArrayList<>()).add(new Row(rs.getString(1),
                                FindingKind.valueOf(rs.getString(2)), load, rs.getLong(3), rs.getLong(4), rs.getLong(5), rs.getLong(6)));
                    }
                }
            }
        }
        out.values().forEach(rows -> rows.sort((a, b) -> LoadRef.IN_LOG_ORDER.compare(a.load, b.load)));
        return out;
    }

    /** A deployment's row of a runtime incident, derived from its findings and its loads' order. */
    private record Derived(String incidentId, String deploymentId, String modelId, boolean showing, int loads, long bytesMoved, long offHeapDelta,
                           long heapDelta, long mappedDelta, Instant firstSeen, Instant lastSeen, Instant leftSeen, String lastLoadId) {
    }

    private static final String LATEST = "SELECT " + LoadRef.COLUMNS + " FROM loads WHERE deployment_id = ? AND model_id = ? AND complete = TRUE "
            + "ORDER BY summary_partition DESC, summary_offset DESC, load_id DESC FETCH FIRST 1 ROWS ONLY";
    private static final String NEXT = "SELECT " + LoadRef.COLUMNS + " FROM loads WHERE deployment_id = ? AND model_id = ? AND complete = TRUE "
            + "AND ((summary_partition, summary_offset) > (?, ?) OR (summary_partition = ? AND summary_offset = ? AND load_id > ?)) "
            + "ORDER BY summary_partition, summary_offset, load_id FETCH FIRST 1 ROWS ONLY";

    /** @param known the model's latest load when one completed in this batch; else it is read */
    private static List<Derived> derive(Connection c, String deployment, String model, List<Row> rows, LoadRef known) throws SQLException {
        LoadRef latest = known != null ? known
                : Sql.first(c, LATEST, RegressionDetector::ref, deployment, model).orElseThrow();
        Map<String, List<Row>> byIncident = new TreeMap<>();
        rows.forEach(r -> byIncident.computeIfAbsent(r.incidentId, k -> new ArrayList<>()).add(r));
        List<Derived> out = new ArrayList<>();
        for (Map.Entry<String, List<Row>> incident : byIncident.entrySet()) {
            List<Row> shown = incident.getValue();
            Row last = shown.get(shown.size() - 1);
            boolean showing = last.load.loadId().equals(latest.loadId());
            Instant first = shown.stream().map(r -> r.load.occurredAt()).min(Instant::compareTo).orElseThrow();
            Instant lastSeen = shown.stream().map(r -> r.load.occurredAt()).max(Instant::compareTo).orElseThrow();
            Instant left = null;
            if (!showing) {
                LoadRef after = last.load;
                left = Sql.first(c, NEXT, rs -> rs.getTimestamp("occurred_at").toInstant(), deployment, model, after.position().partition(),
                        after.position().offset(), after.position().partition(), after.position().offset(), after.loadId()).orElse(null);
            }
            out.add(new Derived(incident.getKey(), deployment, model, showing, shown.size(), last.bytesMoved, last.offHeapDelta, last.heapDelta,
                    last.mappedDelta, first, lastSeen, left, last.load.loadId()));
        }
        return out;
    }

    /** The incidents these findings name, inserted unless another batch (or instance) already did. */
    private void insertNew(Connection c, Map<String, RuntimeFindings.Finding> shown, Map<String, Instant> firstSeen, Map<String, RuntimeFindings.Load> origin, Instant now)
            throws SQLException {
        if (shown.isEmpty()) {
            return;
        }
        try (PreparedStatement insert = c.prepareStatement(insertIncident)) {
            for (RuntimeFindings.Finding f : shown.values()) {
                RootCauses.CauseGroup g = f.group();
                Timestamp first = Timestamp.from(firstSeen.getOrDefault(f.incidentId(), now));
                RuntimeFindings.Load load = origin.get(f.incidentId());
                String model = load.ref().modelId();
                String release = load.ref().release();
                Sql.bind(insert, f.incidentId(), model, release, release, f.kind().name(), f.kind().name(),
                        IncidentLedger.truncate(g.cause(), 2000), g.beforeDomain(), g.afterDomain(), IncidentLedger.truncate(g.beforeReason(), 500),
                        IncidentLedger.truncate(g.afterReason(), 500), g.beforeFormat(), g.afterFormat(), g.tensorCount(), f.tensorsDigest(),
                        IncidentLedger.tensorText(g), IncidentLedger.State.OPEN.name(), first, first, 0L, Timestamp.from(now));
                insert.addBatch();
            }
            insert.executeBatch();
        }
    }

    /** Writes every derived row (an upsert each); returns the incidents a deployment joined or left. */
    private Set<String> write(Connection c, List<Derived> derived) throws SQLException {
        Map<List<String>, Boolean> showingBefore = new HashMap<>();
        Set<String> deployments = new TreeSet<>();
        derived.forEach(d -> deployments.add(d.deploymentId));
        for (List<String> chunk : InList.chunks(deployments)) {
            try (PreparedStatement s = InList.prepare(c, "SELECT incident_id, deployment_id, showing FROM incident_deployments "
                    + "WHERE deployment_id IN (%s) AND incident_id LIKE '" + ID_PREFIX + "%%'", chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    showingBefore.put(List.of(rs.getString(1), rs.getString(2)), rs.getBoolean(3));
                }
            }
        }
        Set<String> material = new TreeSet<>();
        try (PreparedStatement upsert = c.prepareStatement(upsertDeployment)) {
            for (Derived d : derived) {
                Boolean was = showingBefore.get(List.of(d.incidentId, d.deploymentId));
                if (was == null || was != d.showing) {
                    material.add(d.incidentId);
                }
                Sql.bind(upsert, d.incidentId, d.deploymentId, d.modelId, d.showing, d.loads, d.bytesMoved, d.offHeapDelta, d.heapDelta,
                        d.mappedDelta, Timestamp.from(d.firstSeen), Timestamp.from(d.lastSeen), d.leftSeen == null ? null : Timestamp.from(d.leftSeen),
                        d.lastLoadId, null, null);
                upsert.addBatch();
            }
            upsert.executeBatch();
        }
        return material;
    }
}
