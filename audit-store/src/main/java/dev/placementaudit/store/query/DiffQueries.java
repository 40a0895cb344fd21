package dev.placementaudit.store.query;

import dev.placementaudit.store.plans.PlanCache;
import dev.placementaudit.store.plans.TensorPlacement;
import dev.placementaudit.store.query.LoadQueries.LoadSummary;
import dev.placementaudit.store.regression.Finding;
import dev.placementaudit.store.regression.GrowthRule;
import dev.placementaudit.store.regression.ReleaseDiff;
import dev.placementaudit.store.regression.RootCauses;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;

/** What {@code store diff} and the dashboard's diff read: two loads compared, root causes first. */
public final class DiffQueries {
    /**
     * Two loads compared: the root causes first (each with its tensors), then every finding, and their counts by kind.
     */
    public record DiffReport(LoadSummary from, LoadSummary to, List<RootCauses.CauseGroup> causes, List<Finding> findings,
                             Map<String, Long> countsByKind) {
    }

    private final DataSource database;
    private final GrowthRule offHeap;
    private final GrowthRule heap;
    private final PlanCache plans;
    /** Diffs by pair of plans: two loads with the plans of two loads compared before differ alike. */
    private final Map<String, PlanDiff> diffs = PlanCache.lru(256);

    DiffQueries(DataSource database, GrowthRule offHeap, GrowthRule heap, PlanCache plans) {
        this.database = database;
        this.offHeap = offHeap;
        this.heap = heap;
        this.plans = plans;
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
            Optional<LoadSummary> from = LoadQueries.latestComplete(c, deployment, model, fromRelease, fromRuntime);
            Optional<LoadSummary> to = LoadQueries.latestComplete(c, deployment, model, toRelease, toRuntime);
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

    /** The diff of two plans. */
    private record PlanDiff(List<RootCauses.CauseGroup> causes, List<Finding> findings, Map<String, Long> counts) {
    }

    private List<TensorPlacement> placements(Connection c, LoadSummary load) throws SQLException {
        return load.planDigest() == null ? List.of() : plans.placements(c, load.planDigest());
    }

}
