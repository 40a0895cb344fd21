package dev.placementaudit.store.replay;

import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.plans.PlanCache;
import dev.placementaudit.store.plans.TensorPlacement;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;

/**
 * Where the store recorded each tensor of these loads: each load's plan found in one query per 500 loads, each plan's
 * tensors read once ({@link PlanCache}), where a what-if read every load through the {@code load_tensors} view, a
 * query per load that unnests its plan's arrays on PostgreSQL. On the demo's 30 loads this is not where the time goes;
 * on a week of a large fleet it is expected to be, not measured yet (issue 55's growth bench).
 */
final class RecordedPlacements {
    private final Map<String, String> planByLoad;
    private final Map<String, Map<String, String>> domainsByPlan;

    private RecordedPlacements(Map<String, String> planByLoad, Map<String, Map<String, String>> domainsByPlan) {
        this.planByLoad = planByLoad;
        this.domainsByPlan = domainsByPlan;
    }

    static RecordedPlacements of(Connection c, PlanCache plans, List<String> loadIds) throws SQLException {
        Map<String, String> planByLoad = new HashMap<>();
        for (List<String> chunk : InList.chunks(loadIds)) {
            try (PreparedStatement s = InList.prepare(c, "SELECT load_id, plan_digest FROM loads WHERE load_id IN (%s)", chunk);
                 ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    if (rs.getString(2) != null) {
                        planByLoad.put(rs.getString(1), rs.getString(2));
                    }
                }
            }
        }
        Map<String, Map<String, String>> domainsByPlan = new HashMap<>();
        for (String plan : new LinkedHashSet<>(planByLoad.values())) {
            Map<String, String> domains = new HashMap<>();
            for (TensorPlacement t : plans.placements(c, plan)) {
                domains.put(t.name(), t.domain());
            }
            domainsByPlan.put(plan, domains);
        }
        return new RecordedPlacements(planByLoad, domainsByPlan);
    }

    /** Each tensor's recorded domain, by name, in the plan its row names; empty for a load the store does not hold. */
    Map<String, String> of(String loadId) {
        String plan = planByLoad.get(loadId);
        return plan == null ? Map.of() : domainsByPlan.get(plan);
    }
}
