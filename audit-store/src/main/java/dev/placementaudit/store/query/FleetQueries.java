package dev.placementaudit.store.query;

import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.plans.StoredPlans;
import dev.placementaudit.store.regression.RegressionDetector;
import dev.placementaudit.store.regression.RootCauses;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/** What {@code store fleet} and the dashboard's overview read: one release across the fleet. */
public final class FleetQueries {
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

    private final DataSource database;
    /** Platform and profile of each site read so far, by its key (a site's row never changes). */
    private final Map<Long, List<String>> sites = new ConcurrentHashMap<>();

    FleetQueries(DataSource database) {
        this.database = database;
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
        // With what each head's runtime observed it held off-heap and mapped (pools after minus before), where it
        // reported: joined here, once, rather than asked for by chunks of load ids, which the planner answered with a
        // scan of the observations per chunk (480,000 loads, 120,000 observations: 237 ms). Joined, it scans them once
        // or probes them once per head; either way the view still reads an observation per head it shows: 108 ms at
        // 1.2 million loads with a quarter observed (bench/run.sh store --grow, docs/benchmarks.md), over its goal.
        String sql = "SELECT l.deployment_id, l.model_id, l.site_key, l.load_id, l.heap_bytes, l.offheap_bytes, l.mapped_bytes, l.plan_bytes, "
                + "l.previous_plan_bytes, o.direct_after - o.direct_before, o.mapped_after - o.mapped_before, o.load_id FROM load_rows l "
                + "LEFT JOIN load_observations o ON o.load_id = l.load_id AND o.deployment_id = l.deployment_id "
                + "WHERE l.is_head = TRUE AND l.release_name = ?";
        record AtSite(long site, Head head, Long[] observed) {
        }
        List<AtSite> read = Sql.list(database, sql, rs -> new AtSite(rs.getLong(3), new Head(new FleetGroup(rs.getString(2), null, null),
                rs.getString(1), rs.getString(4), rs.getLong(5), rs.getLong(6), rs.getLong(7), StoredPlans.hex(rs.getBytes(8)),
                StoredPlans.hex(rs.getBytes(9))), rs.getString(12) == null ? null : new Long[]{Sql.longOrNull(rs, 10), Sql.longOrNull(rs, 11)}),
                release);
        Map<String, Long[]> observedByLoad = new HashMap<>();
        read.stream().filter(row -> row.observed() != null).forEach(row -> observedByLoad.put(row.head().loadId(), row.observed()));
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

}
