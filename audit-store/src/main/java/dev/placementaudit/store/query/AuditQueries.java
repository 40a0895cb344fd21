package dev.placementaudit.store.query;

import dev.placementaudit.store.alerts.AlertOutbox;
import dev.placementaudit.store.db.Filter;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.db.UncheckedSqlException;
import dev.placementaudit.store.incidents.Incidents;
import dev.placementaudit.store.plans.PlanCache;
import dev.placementaudit.store.plans.StoredPlans;
import dev.placementaudit.store.plans.TensorPlacement;
import dev.placementaudit.store.regression.Finding;
import dev.placementaudit.store.regression.GrowthRule;
import dev.placementaudit.store.regression.LoadRef;
import dev.placementaudit.store.regression.RegressionDetector;
import dev.placementaudit.store.regression.ReleaseDiff;
import dev.placementaudit.store.regression.RootCauses;

import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/**
 * The read side, shared by the HTTP API and the CLI. Parameterised SQL only; inputs arrive validated.
 */
public final class AuditQueries {
    private final DataSource database;
    private final GrowthRule offHeap;
    private final GrowthRule heap;
    /** Plans read, by digest: a plan never changes, so the API reads each once while it is in use. */
    private final PlanCache plans = new PlanCache(64);
    /** Diffs by pair of plans: two loads with the plans of two loads compared before differ alike. */
    private final Map<String, PlanDiff> diffs = PlanCache.lru(256);
    /** Platform and profile of each site read so far, by its key (a site's row never changes). */
    private final Map<Long, List<String>> sites = new ConcurrentHashMap<>();

    public AuditQueries(DataSource database, GrowthRule offHeap, GrowthRule heap) {
        this.database = database;
        this.offHeap = offHeap;
        this.heap = heap;
    }

    public record LoadSummary(String loadId, String deploymentId, String cluster, String host, String release, String modelId,
                              String modelName, String platform, String profile, Instant occurredAt, boolean complete, int tensorCount,
                              long heapBytes, long offHeapBytes, long mappedBytes, int heapTensors, int offHeapTensors, int mappedTensors,
                              String resolverVersion, String policyDigest, int deadLetteredRecords, String planDigest,
                              Long observedHeapBytes, Long observedOffHeapBytes, Long observedMappedBytes, String runtime) {
    }

    public record TensorRow(String name, int index, String storedFormat, long storedBytes, String residentFormat, long residentBytes,
                            String domain, String scope, String reasonCode, String placementReason, String mappingBlockers, String reason,
                            boolean sizeEstimated) {
    }

    /**
     * @param observed what the load's runtime measured it held (null: no observation, or not yet)
     * @param divergences the tensors its runtime placed otherwise than the reference
     * @param runtimeFindings what those gave (docs/observations.md), each naming its incident
     */
    public record LoadDetail(LoadSummary load, List<TensorRow> tensors, int findings, Observed observed, List<DivergenceRow> divergences,
                             List<RuntimeFinding> runtimeFindings) {
    }

    /**
     * What a runtime measured after a load, per domain as observed minus the reading before it (null where it did not
     * measure): beside the plan's bytes, the load's planned heap, off-heap and mapped totals.
     */
    public record Observed(Instant observedAt, String method, Long heapBytes, Long offHeapBytes, Long mappedBytes, Long fileMappedBytes,
                           Long fileResidentBytes, Long anonRssDeltaBytes) {
    }

    public record DivergenceRow(String tensorName, int tensorIndex, String runtimeDomain, long runtimeBytes, String referenceDomain,
                                long referenceBytes, String referenceReasonCode, String referenceReason) {
    }

    public record RuntimeFinding(String kind, String incidentId, long bytesMoved, long offHeapDelta, long mappedDelta) {
    }

    /**
     * Two loads compared: the root causes first (each with its tensors), then every finding, and their counts by kind.
     */
    public record DiffReport(LoadSummary from, LoadSummary to, List<RootCauses.CauseGroup> causes, List<Finding> findings,
                             Map<String, Long> countsByKind) {
    }

    /** A root-cause group without its tensors, as an alert lists it. */
    public record CauseSummary(String cause, int tensorCount, Map<String, Long> deltaBytesByDomain, String beforeReason, String afterReason,
                               String beforeFormat, String afterFormat) {
        static CauseSummary of(RootCauses.CauseGroup g) {
            return new CauseSummary(g.cause(), g.tensorCount(), g.deltaBytesByDomain(), g.beforeReason(), g.afterReason(), g.beforeFormat(),
                    g.afterFormat());
        }
    }

    /** @param observedOffHeapBytes what the head's runtime observed off-heap (null: it reported no observation) */
    public record FleetDeployment(String deploymentId, String modelId, String platform, String profile, String loadId, long heapBytes,
                                  long offHeapBytes, long mappedBytes, int regressions, boolean driftsFromFleet, Long observedOffHeapBytes,
                                  Long observedMappedBytes) {
    }

    /**
     * @param observed how many heads' runtimes reported an observation; {@code plannedOffHeapObserved} and
     *                 {@code observedOffHeapBytes} total the plan and the observation over those heads alone
     */
    public record FleetReport(String release, int deployments, long heapBytes, long offHeapBytes, long mappedBytes,
                              List<String> withRegressions, List<String> drifting, List<FleetDeployment> rows, int observed,
                              long plannedOffHeapObserved, long observedOffHeapBytes) {
    }

    /**
     * An alert, named in full (deployment, model, both releases and both loads), with why: its root causes and the
     * tensors that moved the most bytes in its domain, typed (never JSON inside a string).
     */
    public record AlertRow(String alertId, String kind, String deploymentId, String modelId, String fromRelease, String toRelease,
                           String fromLoadId, String toLoadId, long beforeBytes, long afterBytes, long deltaBytes, String rule,
                           List<CauseSummary> causes, List<RootCauses.TensorChange> topTensors, Instant detectedAt, String suppressedBy,
                           Instant publishedAt) {
    }

    /** The memory domain an alert of this kind is about. */
    public static String domainOf(String kind) {
        return switch (kind) {
            case "OFFHEAP_GROWTH" -> ReleaseDiff.OFFHEAP;
            case "HEAP_GROWTH" -> ReleaseDiff.HEAP;
            default -> ReleaseDiff.MMAP;
        };
    }

    private static final String LOAD_COLUMNS = "load_id, deployment_id, cluster, host, release_name, model_id, model_name, platform_name, "
            + "profile_name, occurred_at, complete, tensor_count, heap_bytes, offheap_bytes, mapped_bytes, heap_tensors, offheap_tensors, "
            + "mapped_tensors, resolver_version, policy_digest, "
            // Records of the load the store set aside: a load missing one says so instead of staying silently incomplete.
            + "(SELECT COUNT(*) FROM dead_letters x WHERE x.load_id = loads.load_id) AS dead_lettered, "
            // The placement plan, once the load is complete with it.
            + "CASE WHEN complete = TRUE THEN plan_digest END AS plan_digest, "
            // What the runtime observed it held, per domain, when it reported (docs/observations.md).
            + "(SELECT o.heap_after - o.heap_before FROM load_observations o WHERE o.load_id = loads.load_id AND o.deployment_id = loads.deployment_id) AS observed_heap, "
            + "(SELECT o.direct_after - o.direct_before FROM load_observations o WHERE o.load_id = loads.load_id AND o.deployment_id = loads.deployment_id) AS observed_offheap, "
            + "(SELECT o.mapped_after - o.mapped_before FROM load_observations o WHERE o.load_id = loads.load_id AND o.deployment_id = loads.deployment_id) AS observed_mapped, "
            // The runtime that made it, when it plans by rules of its own (llama.cpp: build, CPU features, mmap).
            + "runtime";

    /** Loads, newest first; every filter optional. */
    public List<LoadSummary> loads(String deployment, String model, String release, int limit) throws SQLException {
        // The newest loads first, then their columns: the per-load subqueries run for the rows shown, not for every load
        // of the deployment (1,000 of them cost 7 ms in the query bench, against 1 ms for the top 20).
        Filter filter = new Filter().equal("deployment_id", deployment).equal("model_id", model).equal("release_name", release);
        String sql = "SELECT " + LOAD_COLUMNS + " FROM (SELECT * FROM loads" + filter.where() + " ORDER BY occurred_at DESC, load_id FETCH FIRST "
                + limit + " ROWS ONLY) loads ORDER BY occurred_at DESC, load_id";
        return Sql.list(database, sql, AuditQueries::summary, filter.args());
    }

    /** Where every tensor of one load landed. */
    public Optional<LoadDetail> load(String loadId) throws SQLException {
        try (Connection c = database.getConnection()) {
            Optional<LoadSummary> found = Sql.first(c, "SELECT " + LOAD_COLUMNS + " FROM loads WHERE load_id = ?", AuditQueries::summary, loadId);
            if (found.isEmpty()) {
                return Optional.empty();
            }
            LoadSummary load = found.get();
            List<TensorRow> tensors = Sql.list(c, "SELECT tensor_name, tensor_index, stored_format, stored_bytes, resident_format, "
                    + "resident_bytes, memory_domain, scope_kind, reason_code, placement_reason, mapping_blockers, reason, size_estimated FROM "
                    + "plan_tensors WHERE plan_digest = ? ORDER BY tensor_index", rs -> new TensorRow(rs.getString(1), rs.getInt(2), rs.getString(3),
                    rs.getLong(4), rs.getString(5), rs.getLong(6), rs.getString(7), rs.getString(8), rs.getString(9), rs.getString(10),
                    rs.getString(11), rs.getString(12), rs.getBoolean(13)), load.planDigest() == null ? "" : load.planDigest());
            int findings = (int) Sql.number(c, "SELECT COUNT(*) FROM findings WHERE load_id = ?", loadId);
            Observed observed = Sql.first(c, "SELECT observed_at, method, heap_after - heap_before, direct_after - direct_before, "
                    + "mapped_after - mapped_before, file_mapped, file_resident, anon_rss_delta FROM load_observations WHERE load_id = ? "
                    + "AND deployment_id = ?",
                    rs -> new Observed(rs.getTimestamp(1).toInstant(), rs.getString(2), Sql.longOrNull(rs, 3), Sql.longOrNull(rs, 4), Sql.longOrNull(rs, 5),
                            Sql.longOrNull(rs, 6), Sql.longOrNull(rs, 7), Sql.longOrNull(rs, 8)), loadId, load.deploymentId()).orElse(null);
            List<DivergenceRow> divergences = Sql.list(c, "SELECT tensor_name, tensor_index, runtime_domain, runtime_bytes, reference_domain, "
                    + "reference_bytes, reference_reason_code, reference_reason FROM load_divergences WHERE load_id = ? ORDER BY tensor_index",
                    rs -> new DivergenceRow(rs.getString(1), rs.getInt(2), rs.getString(3), rs.getLong(4), rs.getString(5), rs.getLong(6),
                            rs.getString(7), rs.getString(8)), loadId);
            List<RuntimeFinding> runtime = Sql.list(c, "SELECT kind, incident_id, bytes_moved, offheap_delta, mapped_delta FROM runtime_findings "
                    + "WHERE load_id = ? ORDER BY kind, incident_id", rs -> new RuntimeFinding(rs.getString(1), rs.getString(2), rs.getLong(3),
                    rs.getLong(4), rs.getLong(5)), loadId);
            return Optional.of(new LoadDetail(load, tensors, findings, observed, divergences, runtime));
        }
    }

    /** The latest complete load of each release, compared tensor by tensor. */
    public Optional<DiffReport> diff(String deployment, String model, String fromRelease, String toRelease) throws SQLException {
        return diff(deployment, model, fromRelease, toRelease, null, null);
    }

    /**
     * The same, each side the latest complete load whose runtime begins with its prefix when one is given (e.g.
     * {@code llama.cpp b4916}): two runtime builds on one release, a fleet half way through a llama.cpp upgrade.
     */
    public Optional<DiffReport> diff(String deployment, String model, String fromRelease, String toRelease, String fromRuntime, String toRuntime)
            throws SQLException {
        try (Connection c = database.getConnection()) {
            Optional<LoadSummary> from = latestComplete(c, deployment, model, fromRelease, fromRuntime);
            Optional<LoadSummary> to = latestComplete(c, deployment, model, toRelease, toRuntime);
            if (from.isEmpty() || to.isEmpty()) {
                return Optional.empty();
            }
            String pair = from.get().planDigest() + ">" + to.get().planDigest();
            PlanDiff diff = diffs.get(pair);
            if (diff == null) {
                List<TensorPlacement> before = placements(c, from.get());
                List<TensorPlacement> after = placements(c, to.get());
                List<Finding> findings = ReleaseDiff.compare(before, after, offHeap, heap);
                Map<String, Long> counts = new LinkedHashMap<>();
                findings.forEach(f -> counts.merge(f.kind().name(), 1L, Long::sum));
                diff = new PlanDiff(RootCauses.of(before, after), findings, Collections.unmodifiableMap(counts));
                if (from.get().planDigest() != null && to.get().planDigest() != null) {
                    diffs.put(pair, diff);
                }
            }
            return Optional.of(new DiffReport(from.get(), to.get(), diff.causes(), diff.findings(), diff.counts()));
        }
    }

    /** The deployments the fleet view compares a plan within: those running the model on the same platform and profile. */
    private record FleetGroup(String modelId, String platform, String profile) {
        // Written out, as RootCauses.Key's: a record's generated ones bootstrap method handles in a cold JVM.
        @Override
        public boolean equals(Object o) {
            return o instanceof FleetGroup g && Objects.equals(modelId, g.modelId) && Objects.equals(platform, g.platform)
                    && Objects.equals(profile, g.profile);
        }

        @Override
        public int hashCode() {
            return Objects.hash(modelId, platform, profile);
        }
    }

    /** A release head as the fleet view reads it: its plan and the plan of the load it was compared with. */
    private record Head(FleetGroup group, String deploymentId, String loadId, long heapBytes, long offHeapBytes, long mappedBytes,
                        String planDigest, String previousPlanDigest) {
        /** The same head, its group completed with its site's platform and profile. */
        Head at(String platform, String profile) {
            return new Head(new FleetGroup(group.modelId(), platform, profile), deploymentId, loadId, heapBytes, offHeapBytes, mappedBytes,
                    planDigest, previousPlanDigest);
        }
    }

    /**
     * One release across the fleet: totals, deployments with regressions, and deployments whose placement plan differs
     * from the plan most deployments running the model on the same platform and profile have.
     */
    public FleetReport fleet(String release) throws SQLException {
        // The release's heads (its latest complete load per deployment and model), read from their rows: the view
        // release_heads gives the same, but joins each head's site and writes its plans' digests as hex in the database
        // (the fleet view at a million loads: p50 7.9 ms this way, 11-12 through the view; docs/benchmarks.md). Sorted here, by deployment then model in
        // code-point order, the same on every database (and cheaper than a sort under the database's collation).
        String sql = "SELECT deployment_id, model_id, site_key, load_id, heap_bytes, offheap_bytes, mapped_bytes, plan_bytes, previous_plan_bytes "
                + "FROM load_rows WHERE is_head = TRUE AND release_name = ?";
        record AtSite(long site, Head head) {
        }
        List<AtSite> read = Sql.list(database, sql, rs -> new AtSite(rs.getLong(3), new Head(new FleetGroup(rs.getString(2), null, null),
                rs.getString(1), rs.getString(4), rs.getLong(5), rs.getLong(6), rs.getLong(7), StoredPlans.hex(rs.getBytes(8)),
                StoredPlans.hex(rs.getBytes(9)))), release);
        Map<Long, List<String>> sites = sites(read.stream().map(AtSite::site).collect(Collectors.toSet()));
        List<Head> heads = new ArrayList<>(read.size());
        for (AtSite row : read) {
            List<String> site = sites.getOrDefault(row.site(), Arrays.asList(null, null));
            heads.add(row.head().at(site.get(0), site.get(1)));
        }
        // Each head's regressions: those of its pair of plans, counted once per pair (a fleet has few) rather than per head.
        Map<List<String>, Integer> regressionsByPair = new HashMap<>();
        Set<String> from = heads.stream().map(Head::previousPlanDigest).filter(Objects::nonNull).collect(Collectors.toSet());
        try (Connection c = database.getConnection()) {
            for (List<String> chunk : InList.chunks(from)) {
                try (PreparedStatement s = InList.prepare(c, "SELECT from_plan, to_plan, COUNT(*) FROM plan_findings WHERE from_plan IN (%s) AND kind IN ("
                        + RegressionDetector.REGRESSION_KINDS + ") GROUP BY from_plan, to_plan", chunk); ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        regressionsByPair.put(List.of(rs.getString(1), rs.getString(2)), rs.getInt(3));
                    }
                }
            }
        }
        heads.sort(Comparator.comparing(Head::deploymentId).thenComparing(head -> head.group().modelId()));
        // How many heads of each model, platform and profile have each plan: one that differs from the plan most of
        // its group have drifts.
        Map<FleetGroup, Map<String, Integer>> plansByGroup = new HashMap<>();
        for (Head head : heads) {
            plansByGroup.computeIfAbsent(head.group(), g -> new HashMap<>(4)).merge(String.valueOf(head.planDigest()), 1, Integer::sum);
        }
        Map<FleetGroup, Integer> majority = new HashMap<>();
        plansByGroup.forEach((group, plans) -> majority.put(group, plans.values().stream().mapToInt(Integer::intValue).max().orElse(0)));
        // What each head's runtime observed it held off-heap and mapped (pools after minus before), where it reported.
        Map<String, Long[]> observedByLoad = new HashMap<>();
        try (Connection c = database.getConnection()) {
            for (List<String> chunk : InList.chunks(heads.stream().map(Head::loadId).toList())) {
                try (PreparedStatement s = InList.prepare(c, "SELECT o.load_id, o.direct_after - o.direct_before, o.mapped_after - o.mapped_before "
                        + "FROM load_observations o JOIN load_rows l ON l.load_id = o.load_id AND l.deployment_id = o.deployment_id "
                        + "WHERE o.load_id IN (%s)", chunk); ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        observedByLoad.put(rs.getString(1), new Long[]{Sql.longOrNull(rs, 2), Sql.longOrNull(rs, 3)});
                    }
                }
            }
        }
        int observed = 0;
        long plannedOffHeapObserved = 0;
        long observedOffHeap = 0;
        List<FleetDeployment> rows = new ArrayList<>(heads.size());
        long heapBytes = 0;
        long offHeapBytes = 0;
        long mappedBytes = 0;
        for (Head head : heads) {
            Map<String, Integer> plans = plansByGroup.get(head.group());
            boolean drifts = plans.size() > 1 && plans.get(String.valueOf(head.planDigest())) < majority.get(head.group());
            Long[] seen = observedByLoad.getOrDefault(head.loadId(), new Long[2]);
            Long seenOffHeap = seen[0];
            Long seenMapped = seen[1];
            if (seenOffHeap != null) {
                observed++;
                plannedOffHeapObserved += head.offHeapBytes();
                observedOffHeap += seenOffHeap;
            }
            rows.add(new FleetDeployment(head.deploymentId(), head.group().modelId(), head.group().platform(), head.group().profile(),
                    head.loadId(), head.heapBytes(), head.offHeapBytes(), head.mappedBytes(),
                    head.previousPlanDigest() == null || head.planDigest() == null ? 0
                            : regressionsByPair.getOrDefault(List.of(head.previousPlanDigest(), head.planDigest()), 0), drifts, seenOffHeap, seenMapped));
            heapBytes += head.heapBytes();
            offHeapBytes += head.offHeapBytes();
            mappedBytes += head.mappedBytes();
        }
        List<String> withRegressions = rows.stream().filter(r -> r.regressions() > 0).map(FleetDeployment::deploymentId).distinct().toList();
        List<String> drifting = rows.stream().filter(FleetDeployment::driftsFromFleet).map(FleetDeployment::deploymentId).distinct().toList();
        int deployments = (int) rows.stream().map(FleetDeployment::deploymentId).distinct().count();
        return new FleetReport(release, deployments, heapBytes, offHeapBytes, mappedBytes, withRegressions, drifting, rows, observed,
                plannedOffHeapObserved, observedOffHeap);
    }

    /**
     * Each site's platform and profile ({@code load_sites}), from {@link #sites} where read before: a site's row never
     * changes (ADR 13), and a fleet view needs the same few hundred again and again.
     */
    private Map<Long, List<String>> sites(Set<Long> keys) throws SQLException {
        List<Long> missing = keys.stream().filter(key -> !sites.containsKey(key)).toList();
        if (!missing.isEmpty()) {
            if (sites.size() + missing.size() > 100_000) {
                sites.clear();
            }
            try (Connection c = database.getConnection()) {
                for (List<Long> chunk : InList.chunks(missing)) {
                    try (PreparedStatement s = InList.prepare(c, "SELECT site_key, platform_name, profile_name FROM load_sites WHERE site_key IN (%s)",
                            chunk); ResultSet rs = s.executeQuery()) {
                        while (rs.next()) {
                            sites.put(rs.getLong(1), List.of(rs.getString(2), rs.getString(3)));
                        }
                    }
                }
            }
        }
        Map<Long, List<String>> found = new HashMap<>();
        keys.forEach(key -> {
            List<String> site = sites.get(key);
            if (site != null) {
                found.put(key, site);
            }
        });
        return found;
    }

    /** One tensor of one load, as the tensor's history across releases lists it. */
    public record TensorHistoryRow(String release, String loadId, Instant occurredAt, String domain, long residentBytes, String storedFormat,
                                   String residentFormat, String reasonCode, String reason) {
    }

    /** Releases with a complete load, in the order they first appeared. */
    public List<String> releases() throws SQLException {
        return Sql.list(database, "SELECT release_name, MIN(occurred_at) AS first FROM loads WHERE complete = TRUE GROUP BY release_name "
                + "ORDER BY first, release_name", rs -> rs.getString(1));
    }

    /**
     * Where one tensor of a deployment's model landed in each complete load, oldest first. The tensor is looked up
     * once per plan those loads name, then joined to them: on PostgreSQL a plan's tensors are unnested from their
     * arrays (V22), and joined load by load that was a plan's every tensor per load (64 ms for 250 loads, 2.5 ms so).
     * {@code OFFSET 0} keeps the planner from merging the two.
     */
    public List<TensorHistoryRow> tensorHistory(String deployment, String model, String tensor, int limit) throws SQLException {
        return Sql.list(database, "SELECT l.release_name, l.load_id, l.occurred_at, d.memory_domain, d.resident_bytes, d.stored_format, "
                + "d.resident_format, d.reason_code, d.reason FROM loads l JOIN (SELECT t.plan_digest, t.memory_domain, t.resident_bytes, "
                + "t.stored_format, t.resident_format, t.reason_code, t.reason FROM plan_tensors t WHERE t.tensor_name = ? AND t.plan_digest IN "
                + "(SELECT p.plan_digest FROM loads p WHERE p.deployment_id = ? AND p.model_id = ? AND p.complete = TRUE) OFFSET 0 ROWS) d "
                + "ON d.plan_digest = l.plan_digest WHERE l.deployment_id = ? AND l.model_id = ? AND l.complete = TRUE "
                + "ORDER BY l.occurred_at, l.load_id FETCH FIRST " + limit + " ROWS ONLY", rs -> new TensorHistoryRow(rs.getString(1),
                rs.getString(2), Sql.instant(rs, 3), rs.getString(4), rs.getLong(5), rs.getString(6), rs.getString(7), rs.getString(8),
                rs.getString(9)), tensor, deployment, model, deployment, model);
    }

    /** Incidents, open ones first, then the most recently seen (see {@link Incidents#list}); at most {@code limit}. */
    public List<Incidents.Incident> incidents(boolean openOnly, String release, String model, int limit) throws SQLException {
        try (Connection c = database.getConnection()) {
            List<Incidents.Incident> all = Incidents.list(c, openOnly, release, model);
            return all.subList(0, Math.min(limit, all.size()));
        }
    }

    /**
     * One incident by id or unique prefix, with its tensors and deployments.
     *
     * @throws IllegalArgumentException when the prefix names several
     */
    public Optional<Incidents.Detail> incident(String idOrPrefix) throws SQLException {
        try (Connection c = database.getConnection()) {
            return Incidents.find(c, idOrPrefix);
        }
    }

    public long alertCount() throws SQLException {
        try (Connection c = database.getConnection()) {
            return Sql.number(c, "SELECT COUNT(*) FROM alerts");
        }
    }

    public List<AlertRow> alerts(String deployment, int limit) throws SQLException {
        String sql = "SELECT alert_id, kind, deployment_id, model_id, from_release, to_release, from_load_id, to_load_id, before_bytes, "
                + "after_bytes, delta_bytes, rule_text, detected_at, suppressed_by, published_at, " + AlertOutbox.TEXT_CAUSES + " FROM alerts a "
                + AlertOutbox.withText("") + (deployment == null ? "" : " WHERE deployment_id = ?") + " ORDER BY detected_at DESC, alert_id FETCH FIRST "
                + limit + " ROWS ONLY";
        List<AlertRow> alerts = new ArrayList<>();
        try (Connection c = database.getConnection(); PreparedStatement s = Sql.prepare(c, sql, deployment == null ? new Object[0]
                : new Object[] {deployment}); ResultSet rs = s.executeQuery()) {
            // Causes come from the two loads' decisions, read once per pair of loads (several alerts share one).
            Map<String, List<RootCauses.CauseGroup>> byPair = new HashMap<>();
            while (rs.next()) {
                String kind = rs.getString(2);
                String fromLoad = rs.getString(7);
                String toLoad = rs.getString(8);
                List<RootCauses.CauseGroup> causes = fromLoad == null ? List.of()
                        : byPair.computeIfAbsent(fromLoad + "/" + toLoad, pair -> causes(c, fromLoad, toLoad));
                String domain = domainOf(kind);
                List<CauseSummary> summaries = RootCauses.touching(causes, domain).stream().map(CauseSummary::of).toList();
                if (summaries.isEmpty()) {
                    // A load pruned by retention: the causes written with the alert still say why.
                    summaries = storedCauses(rs.getString(16));
                }
                alerts.add(new AlertRow(rs.getString(1), kind, rs.getString(3), rs.getString(4), rs.getString(5), rs.getString(6), fromLoad, toLoad,
                        rs.getLong(9), rs.getLong(10), rs.getLong(11), rs.getString(12), summaries, RootCauses.topTensors(causes, domain, 5),
                        Sql.instant(rs, 13), rs.getString(14), Sql.instant(rs, 15)));
            }
        } catch (UncheckedSqlException e) {
            throw e.getCause();
        }
        return alerts;
    }

    private static List<CauseSummary> storedCauses(String json) {
        try {
            return AlertOutbox.readCauses(json).stream().map(line -> new CauseSummary(line, 0, Map.of(), null, null, null, null)).toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    private List<RootCauses.CauseGroup> causes(Connection c, String fromLoad, String toLoad) {
        try {
            Optional<LoadRef> from = ref(c, fromLoad);
            Optional<LoadRef> to = ref(c, toLoad);
            if (from.isEmpty() || to.isEmpty()) {
                return List.of();
            }
            return RootCauses.of(plans.placements(c, from.get().planDigest()), plans.placements(c, to.get().planDigest()));
        } catch (SQLException e) {
            throw new UncheckedSqlException(e);
        }
    }

    private static Optional<LoadRef> ref(Connection c, String loadId) throws SQLException {
        return Sql.first(c, "SELECT " + LoadRef.COLUMNS + " FROM loads WHERE load_id = ?", RegressionDetector::ref, loadId);
    }

    /** The diff of two plans. */
    private record PlanDiff(List<RootCauses.CauseGroup> causes, List<Finding> findings, Map<String, Long> counts) {
    }

    /** The latest complete load of a release, and of a runtime whose name begins with {@code runtime} when it is given. */
    private Optional<LoadSummary> latestComplete(Connection c, String deployment, String model, String release, String runtime) throws SQLException {
        List<Object> args = new ArrayList<>(List.of(deployment, model, release));
        if (runtime != null) {
            args.add(runtime + "%");
        }
        return Sql.first(c, "SELECT " + LOAD_COLUMNS + " FROM loads WHERE deployment_id = ? AND model_id = ? AND release_name = ? AND "
                + "complete = TRUE" + (runtime == null ? "" : " AND runtime LIKE ?") + " ORDER BY summary_partition DESC, summary_offset DESC, "
                + "load_id DESC FETCH FIRST 1 ROWS ONLY", AuditQueries::summary, args.toArray());
    }

    private List<TensorPlacement> placements(Connection c, LoadSummary load) throws SQLException {
        return load.planDigest() == null ? List.of() : plans.placements(c, load.planDigest());
    }

    private static LoadSummary summary(ResultSet rs) throws SQLException {
        return new LoadSummary(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5), rs.getString(6),
                rs.getString(7), rs.getString(8), rs.getString(9), Sql.instant(rs, 10), rs.getBoolean(11), rs.getInt(12),
                rs.getLong(13), rs.getLong(14), rs.getLong(15), rs.getInt(16), rs.getInt(17), rs.getInt(18), rs.getString(19), rs.getString(20),
                rs.getInt(21), rs.getString(22), Sql.longOrNull(rs, 23), Sql.longOrNull(rs, 24), Sql.longOrNull(rs, 25), rs.getString(26));
    }
}
