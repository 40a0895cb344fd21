package dev.placementaudit.store.ingest;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.schemas.PlanDigest;
import dev.placementaudit.store.db.ById;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.plans.PlanCache;
import dev.placementaudit.store.plans.PlanMatch;
import dev.placementaudit.store.plans.PlanValues;
import dev.placementaudit.store.plans.StoredPlans;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What a batch's decisions write (docs/adr/0002): a load's decisions that match, value by value, the stored plan they
 * name write nothing; a load whose every decision is here makes its plan at once; the rest wait in the decisions table
 * for the load's other decisions, and so do all later decisions of a load that has some waiting there.
 */
final class DecisionRows {
    private static final Logger LOG = LoggerFactory.getLogger(DecisionRows.class);

    /** A decision row's INSERT, in the dialect's words for "unless one with its id is there already". */
    private final String insertDecision;
    private final StoredPlans plans;
    private final PlanCache cache;

    DecisionRows(Dialect dialect, StoredPlans plans, PlanCache cache) {
        this.insertDecision = dialect.insertIgnoringDuplicates("decisions", StoredDecision.COLUMNS, StoredDecision.TYPES, "decision_id");
        this.plans = plans;
        this.cache = cache;
    }

    /** What the decisions wrote: staged rows, the loads they belong to, and new plans' tensor rows. */
    record Written(int stagedRows, Set<String> stagedLoads, int planRows) {
    }

    Written write(Connection c, Map<String, List<Decoded.Decision>> byLoad) throws SQLException {
        Map<String, String> named = new HashMap<>();
        byLoad.forEach((loadId, decisions) -> {
            String digest = PlanMatch.planOf(events(decisions));
            if (digest != null) {
                named.put(loadId, digest);
            }
        });
        Set<String> stored = StoredPlans.stored(c, new HashSet<>(named.values()));
        Set<String> waiting = StoredPlans.staged(c, byLoad.keySet());
        Map<String, StoredPlans.NewPlan> newPlans = new LinkedHashMap<>();
        List<AllocationDecided> staged = new ArrayList<>();
        Set<String> stagedLoads = new LinkedHashSet<>();
        for (Map.Entry<String, List<Decoded.Decision>> load : byLoad.entrySet()) {
            String digest = named.get(load.getKey());
            boolean known = digest != null && (stored.contains(digest) || newPlans.containsKey(digest));
            if (known && !waiting.contains(load.getKey()) && matches(c, digest, load.getValue(), newPlans)) {
                continue;
            }
            List<AllocationDecided> whole = digest == null || known ? null : PlanMatch.whole(events(load.getValue()));
            // Decisions the decoder found to be the whole plan they name need not be digested again.
            if (whole != null && (load.getValue().stream().allMatch(decision -> digest.equals(decision.checkedPlan()))
                    || PlanDigest.of(whole).equals(digest))) {
                newPlans.put(digest, new StoredPlans.NewPlan(digest, whole));
                continue;
            }
            load.getValue().forEach(decision -> staged.add(decision.event()));
            stagedLoads.add(load.getKey());
        }
        if (!staged.isEmpty()) {
            try (PreparedStatement d = c.prepareStatement(insertDecision)) {
                for (AllocationDecided decision : staged) {
                    Object[] values = StoredDecision.values(decision);
                    for (int i = 0; i < values.length; i++) {
                        d.setObject(i + 1, values[i]);
                    }
                    d.addBatch();
                }
                d.executeBatch();
            }
        }
        int planRows = plans.write(c, newPlans.values());
        newPlans.values().forEach(cache::put);
        return new Written(staged.size(), stagedLoads, planRows);
    }

    /**
     * Whether each of these decisions carries exactly the values of the plan's tensor at its index (those checked as they
     * were decoded are not checked again).
     */
    private boolean matches(Connection c, String digest, List<Decoded.Decision> group, Map<String, StoredPlans.NewPlan> newPlans)
            throws SQLException {
        List<Object[]> tensors = null;
        for (Decoded.Decision decision : group) {
            if (digest.equals(decision.checkedPlan())) {
                continue;
            }
            if (tensors == null) {
                StoredPlans.NewPlan fresh = newPlans.get(digest);
                tensors = fresh != null ? fresh.values() : cache.values(c, digest);
            }
            AllocationDecided d = decision.event();
            if (d.getTensorCount() != tensors.size() || !PlanMatch.carries(tensors, d)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Decisions this batch staged for loads that are complete already (another instance completed the load by its plan
     * while this one could not see the plan yet): each that carries exactly its plan's tensor goes; one that contradicts
     * the plan stays in {@code decisions}, visible and logged, never silently dropped. Loads chained before plans keep
     * their rows (their chain entries cover them).
     */
    void dropStragglers(Connection c, Set<String> stagedLoads, Collection<String> completed) throws SQLException {
        Set<String> stragglers = new LinkedHashSet<>(stagedLoads);
        stragglers.removeAll(completed);
        for (List<String> chunk : InList.chunks(stragglers)) {
            dropStragglers(c, chunk);
        }
    }

    private void dropStragglers(Connection c, List<String> loadIds) throws SQLException {
        List<String[]> complete = new ArrayList<>();
        try (PreparedStatement s = InList.prepare(c, "SELECT l.load_id, l.plan_digest FROM loads l WHERE " + ById.in("l") + " AND l.complete = TRUE "
                + "AND l.plan_digest IS NOT NULL AND NOT EXISTS (SELECT 1 FROM chain_entries e WHERE e.deployment_id = l.deployment_id "
                + "AND e.load_id = l.load_id AND e.encoding = 1)",
                loadIds); ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
                complete.add(new String[]{rs.getString(1), rs.getString(2)});
            }
        }
        for (String[] load : complete) {
            List<Object[]> plan = cache.values(c, load[1]);
            List<String> matching = new ArrayList<>();
            try (PreparedStatement s = c.prepareStatement("SELECT decision_id, " + String.join(", ", PlanDigest.COLUMNS)
                    + " FROM decisions WHERE load_id = ?")) {
                s.setString(1, load[0]);
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        Object[] values = PlanValues.read(rs, 2);
                        if (PlanMatch.carries(plan, (Integer) values[0], values)) {
                            matching.add(rs.getString(1));
                        } else {
                            LOG.warn("decision {} of load {} contradicts the plan the load completed with ({}): kept in the decisions table",
                                    rs.getString(1), load[0], load[1]);
                        }
                    }
                }
            }
            for (List<String> chunk : InList.chunks(matching)) {
                try (PreparedStatement delete = InList.prepare(c, "DELETE FROM decisions WHERE decision_id IN (%s)", chunk)) {
                    delete.executeUpdate();
                }
            }
        }
    }

    private static List<AllocationDecided> events(List<Decoded.Decision> decisions) {
        List<AllocationDecided> events = new ArrayList<>(decisions.size());
        decisions.forEach(d -> events.add(d.event()));
        return events;
    }
}
