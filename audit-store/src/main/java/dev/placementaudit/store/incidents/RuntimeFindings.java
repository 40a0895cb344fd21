package dev.placementaudit.store.incidents;

import dev.placementaudit.store.db.ById;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.regression.FindingKind;
import dev.placementaudit.store.regression.GrowthRule;
import dev.placementaudit.store.regression.LoadRef;
import dev.placementaudit.store.regression.RegressionDetector;
import dev.placementaudit.store.regression.ReleaseDiff;
import dev.placementaudit.store.regression.RootCauses;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The runtime findings of a complete load ({@code DIVERGED}, {@code UNPLANNED_OFFHEAP}, {@code MAPPING_NOT_OBSERVED}):
 * a function of its plan's totals, its observation and its divergences alone, read here. What becomes of them across a
 * deployment's loads, and the incidents they make, is {@link RuntimeIncidents}'.
 */
public final class RuntimeFindings {
    /** The most bytes a mapping may miss and not be called missing: page rounding and the measure's own noise. */
    static final long MAPPING_SLACK_BYTES = 1L << 20;

    private final GrowthRule unplannedOffHeap;

    RuntimeFindings(GrowthRule unplannedOffHeap) {
        this.unplannedOffHeap = unplannedOffHeap;
    }

    /**
     * A finding of one load, with the cause (and so the incident) it belongs to.
     *
     * @param tensorsDigest the SHA-256 of the cause's tensor names, as the incident row keeps it (Cause's)
     */
    public record Finding(String incidentId, FindingKind kind, RootCauses.CauseGroup group, String tensorsDigest, long offHeapDelta,
                          long heapDelta, long mappedDelta) {
    }

    /** A complete load as the findings need it: where it is in the log and what its plan holds per domain. */
    record Load(LoadRef ref, long heapBytes, long offHeapBytes, long mappedBytes) {
    }

    /** The findings of one complete load: a function of its plan's totals, its observation and its divergences. */
    List<Finding> of(Load load, Observed o, List<RootCauses.TensorChange> diverged) {
        List<Finding> out = new ArrayList<>();
        String model = load.ref().modelId();
        String release = load.ref().release();
        Map<List<String>, List<RootCauses.TensorChange>> groups = new LinkedHashMap<>();
        for (RootCauses.TensorChange t : diverged) {
            groups.computeIfAbsent(List.of(t.beforeDomain(), t.afterDomain(), t.beforeReasonCode()), k -> new ArrayList<>()).add(t);
        }
        for (Map.Entry<List<String>, List<RootCauses.TensorChange>> group : groups.entrySet()) {
            List<RootCauses.TensorChange> tensors = group.getValue();
            String reference = group.getKey().get(0);
            String runtime = group.getKey().get(1);
            Map<String, Long> delta = new LinkedHashMap<>();
            long moved = 0;
            for (RootCauses.TensorChange t : tensors) {
                delta.merge(runtime, t.afterBytes(), Long::sum);
                delta.merge(reference, -t.beforeBytes(), Long::sum);
                moved += t.afterBytes();
            }
            String cause = "the runtime put " + tensors.size() + (tensors.size() == 1 ? " tensor" : " tensors") + " in " + runtime
                    + " where the reference decides " + reference + " (" + group.getKey().get(2) + ")";
            RootCauses.CauseGroup g = new RootCauses.CauseGroup(cause, tensors.size(), delta, moved, reference, runtime, group.getKey().get(2),
                    "as the runtime reported", null, null, tensors);
            out.add(finding(model, release, FindingKind.DIVERGED, g, delta));
        }
        if (o != null && o.offHeap != null && unplannedOffHeap.fires(load.offHeapBytes(), o.offHeap)) {
            long unplanned = o.offHeap - load.offHeapBytes();
            Map<String, Long> delta = Map.of(ReleaseDiff.OFFHEAP, unplanned);
            RootCauses.CauseGroup g = new RootCauses.CauseGroup("the runtime held more off-heap than its plan (observed minus planned: "
                    + unplannedOffHeap.describe() + ")", 0, delta, unplanned, ReleaseDiff.OFFHEAP, ReleaseDiff.OFFHEAP, "planned",
                    "observed", null, null, List.of());
            out.add(finding(model, release, FindingKind.UNPLANNED_OFFHEAP, g, delta));
        }
        if (o != null && o.mapped != null && load.mappedBytes() > 0) {
            long missing = load.mappedBytes() - o.mapped;
            if (missing > Math.max(MAPPING_SLACK_BYTES, load.mappedBytes() / 100)) {
                Map<String, Long> delta = Map.of(ReleaseDiff.MMAP, -missing);
                RootCauses.CauseGroup g = new RootCauses.CauseGroup("bytes the plan maps were not found mapped: the platform refused the "
                        + "mapping, or the runtime copied them", 0, delta, missing, ReleaseDiff.MMAP, null, "planned", "not observed mapped",
                        null, null, List.of());
                out.add(finding(model, release, FindingKind.MAPPING_NOT_OBSERVED, g, delta));
            }
        }
        return out;
    }

    /** The finding of this cause: its fingerprint takes the tensor names' digest for DIVERGED alone (the others name no tensor). */
    private static Finding finding(String model, String release, FindingKind kind, RootCauses.CauseGroup g, Map<String, Long> delta) {
        String tensorsDigest = Cause.tensorsDigest(g);
        String id = RuntimeIncidents.ID_PREFIX + Cause.sha256(String.join("\0", "placement-runtime-incident/1", model, release, kind.name(),
                String.valueOf(g.beforeDomain()), String.valueOf(g.afterDomain()), String.valueOf(g.beforeReason()),
                kind == FindingKind.DIVERGED ? tensorsDigest : "")).substring(0, 15);
        return new Finding(id, kind, g, tensorsDigest, delta.getOrDefault(ReleaseDiff.OFFHEAP, 0L), delta.getOrDefault(ReleaseDiff.HEAP, 0L),
                delta.getOrDefault(ReleaseDiff.MMAP, 0L));
    }

    static Map<String, Load> completeLoads(Connection c, Collection<String> loadIds) throws SQLException {
        Map<String, Load> loads = new LinkedHashMap<>();
        for (List<String> chunk : InList.chunks(new TreeSet<>(loadIds))) {
            try (PreparedStatement s = InList.prepare(c, "SELECT " + LoadRef.COLUMNS + ", heap_bytes, offheap_bytes, mapped_bytes FROM loads "
                    + "WHERE " + ById.in("") + " AND complete = TRUE", chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    LoadRef ref = RegressionDetector.ref(rs);
                    loads.put(ref.loadId(), new Load(ref, rs.getLong("heap_bytes"), rs.getLong("offheap_bytes"), rs.getLong("mapped_bytes")));
                }
            }
        }
        return loads;
    }

    /**
     * What an observation says the load added, per domain the findings look at; null where it was not measured. Mapped
     * is the larger of the mapped pool's growth and the file's mapped size, whichever were measured.
     */
    public record Observed(Long heap, Long offHeap, Long mapped) {
    }

    /** {@link Observed} as SQL over {@code load_observations} aliased {@code o}: read back with {@link #observed}. */
    public static final String OBSERVED_COLUMNS = "o.heap_after - o.heap_before, o.direct_after - o.direct_before, "
            + "o.mapped_after - o.mapped_before, o.file_mapped";

    /** The {@link #OBSERVED_COLUMNS} of a row, from column {@code first} on. */
    public static Observed observed(ResultSet rs, int first) throws SQLException {
        Long pool = Sql.longOrNull(rs, first + 2);
        Long file = Sql.longOrNull(rs, first + 3);
        Long mapped = pool == null ? file : file == null ? pool : Long.valueOf(Math.max(pool, file));
        return new Observed(Sql.longOrNull(rs, first), Sql.longOrNull(rs, first + 1), mapped);
    }

    static Map<String, Observed> observations(Connection c, Collection<String> loadIds) throws SQLException {
        Map<String, Observed> out = new HashMap<>();
        for (List<String> chunk : InList.chunks(List.copyOf(loadIds))) {
            // Only an observation of the load's own deployment: one naming another draws no finding, whatever the order (V24).
            try (PreparedStatement s = InList.prepare(c, "SELECT o.load_id, " + OBSERVED_COLUMNS + " FROM load_observations o "
                    + ById.join("o", "load_id") + " AND l.deployment_id = o.deployment_id WHERE o.load_id IN (%s)", chunk);
                 ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getString(1), observed(rs, 2));
                }
            }
        }
        return out;
    }

    static Map<String, List<RootCauses.TensorChange>> divergences(Connection c, Collection<String> loadIds) throws SQLException {
        Map<String, List<RootCauses.TensorChange>> out = new HashMap<>();
        for (List<String> chunk : InList.chunks(List.copyOf(loadIds))) {
            try (PreparedStatement s = InList.prepare(c, "SELECT load_id, tensor_name, runtime_domain, runtime_bytes, reference_domain, "
                    + "reference_bytes, reference_reason_code, reference_reason FROM load_divergences WHERE load_id IN (%s) "
                    + "ORDER BY load_id, tensor_index", chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    out.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(new RootCauses.TensorChange(rs.getString(2), rs.getString(5),
                            rs.getString(3), rs.getLong(6), rs.getLong(4), null, null, rs.getString(7), null, rs.getString(8), null));
                }
            }
        }
        return out;
    }
}
