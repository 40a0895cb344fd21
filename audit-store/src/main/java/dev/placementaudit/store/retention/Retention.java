package dev.placementaudit.store.retention;

import dev.placementaudit.store.chain.ChainHead;
import dev.placementaudit.store.chain.HashChain;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.db.LoadPartitions;
import dev.placementaudit.store.ingest.ReleaseHeads;
import dev.placementaudit.store.plans.StoredPlans;
import dev.placementaudit.store.regression.LoadRef;
import dev.placementaudit.store.regression.RegressionDetector;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;

/**
 * Retention of the projection: drops the loads that occurred before a cutoff, with their decisions, findings, alerts
 * and dead-letter rows, one deployment per transaction. The log stays the source of truth: {@code store rebuild}
 * brings them back.
 *
 * <p>Kept whatever their age: the latest complete load of each deployment and model, and the load it was compared
 * with, so the current diff, the fleet view and the latest alerts still answer. The hash chain is cut only at its
 * start: a deployment's oldest entries are dropped as long as every one of them is prunable, and the last dropped
 * entry becomes the chain's anchor ({@code chain_anchors}, and the chain topic), which the first remaining entry names
 * as its previous hash. So {@code store verify} still checks every remaining link.
 */
public final class Retention {
    private final DataSource database;
    private final Dialect dialect;

    public Retention(DataSource database, Dialect dialect) {
        this.database = database;
        this.dialect = dialect;
    }

    /** What a deployment loses: its loads, each as the prune read it, and its chain's new anchor. */
    record DeploymentPlan(String deploymentId, List<String> loadIds, ChainHead anchor, Map<String, Old> rows) {
        long decisions() {
            return loadIds.stream().mapToLong(id -> rows.get(id).tensors()).sum();
        }
    }

    /**
     * What the prune needs of a load it may drop, read once with the deployment's old loads (by deployment and time):
     * not looked up again by id for each step, which on a store partitioned by month probed every month's key each time.
     */
    record Old(Instant occurredAt, boolean chained, long tensors, byte[] plan, boolean head, String model, String release) {
    }

    /**
     * @param decisions the tensor decisions the dropped loads held (their plans' tensors, counted per load)
     * @param plans     plans dropped because no load names them any more (0 on a dry run: nothing is dropped)
     * @param partitions the months of {@code load_rows} dropped whole ({@link LoadPartitions}; PostgreSQL only)
     */
    public record Result(String rule, boolean dryRun, int deployments, int loads, long decisions, int plans, List<ChainHead> anchors,
                         List<String> partitions) {
    }

    /** Which loads are old: by time, or by how many newer releases a deployment's model has had since. */
    public sealed interface Rule {
        /** Loads that occurred before the cutoff. */
        record Before(Instant cutoff) implements Rule {
            @Override
            public String toString() {
                return "loads that occurred before " + cutoff;
            }
        }

        /** Loads of any release but the {@code releases} latest of each deployment and model (by their latest load). */
        record KeepReleases(int releases) implements Rule {
            public KeepReleases {
                if (releases < 1) {
                    throw new IllegalArgumentException("keep at least 1 release, not " + releases);
                }
            }

            @Override
            public String toString() {
                return "loads of all but the latest " + releases + " release" + (releases == 1 ? "" : "s") + " of each deployment and model";
            }
        }
    }

    public Result prune(Instant cutoff, boolean dryRun, PrintWriter progress) throws SQLException {
        return prune(new Rule.Before(cutoff), dryRun, progress);
    }

    /**
     * @param dryRun count what would go, change nothing
     */
    public Result prune(Rule rule, boolean dryRun, PrintWriter progress) throws SQLException {
        List<String> deployments = new ArrayList<>();
        List<LoadPartitions.Partition> whole = new ArrayList<>();
        try (Connection c = database.getConnection(); PreparedStatement s = rule instanceof Rule.Before before
                ? c.prepareStatement("SELECT DISTINCT deployment_id FROM loads WHERE occurred_at < ? ORDER BY deployment_id")
                : c.prepareStatement("SELECT DISTINCT deployment_id FROM loads ORDER BY deployment_id")) {
            if (rule instanceof Rule.Before before) {
                s.setTimestamp(1, Timestamp.from(before.cutoff()));
                for (LoadPartitions.Partition p : LoadPartitions.list(c)) {
                    if (p.before(before.cutoff())) {
                        whole.add(p);
                    }
                }
            }
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    deployments.add(rs.getString(1));
                }
            }
        }
        // A month dropped whole goes with every deployment's rows in one transaction: a prune stopped half-way leaves
        // the store as it was. Otherwise each deployment is a transaction of its own.
        long started = System.nanoTime();
        Connection shared = whole.isEmpty() || dryRun ? null : database.getConnection();
        WholeMonths months = shared == null ? null : new WholeMonths(whole);
        int loads = 0;
        long decisions = 0;
        int touched = 0;
        Set<String> planCandidates = new HashSet<>();
        List<ChainHead> anchors = new ArrayList<>();
        try {
            if (shared != null) {
                shared.setAutoCommit(false);
            }
            for (int i = 0; i < deployments.size(); i++) {
                String deployment = deployments.get(i);
                Connection c = shared != null ? shared : database.getConnection();
                try {
                    c.setAutoCommit(false);
                    DeploymentPlan plan = plan(c, deployment, rule);
                    long rows = plan.decisions();
                    if (!dryRun && !plan.loadIds().isEmpty()) {
                        planCandidates.addAll(delete(c, plan, months));
                    }
                    if (shared == null) {
                        c.commit();
                    }
                    if (!plan.loadIds().isEmpty()) {
                        touched++;
                        loads += plan.loadIds().size();
                        decisions += rows;
                        if (plan.anchor() != null) {
                            anchors.add(plan.anchor());
                        }
                    }
                    progress.printf(Locale.ROOT, "  [%d/%d] %s: %s %d loads, %d decisions%s%n", i + 1, deployments.size(), deployment,
                            dryRun ? "would drop" : "dropped", plan.loadIds().size(), rows,
                            plan.anchor() == null ? "" : ", chain now starts after entry " + plan.anchor().seq());
                    progress.flush();
                } catch (SQLException | RuntimeException e) {
                    c.rollback();
                    throw e;
                } finally {
                    if (shared == null) {
                        c.close();
                    }
                }
            }
            if (shared != null) {
                progress.printf(Locale.ROOT, "  %d deployments planned in %.1f s; dropping the months whole%n", deployments.size(),
                        (System.nanoTime() - started) / 1e9);
                months.drop(shared, progress);
                shared.commit();
            }
        } catch (SQLException | RuntimeException e) {
            if (shared != null) {
                shared.rollback();
            }
            throw e;
        } finally {
            if (shared != null) {
                shared.close();
            }
        }
        int plans = planCandidates.isEmpty() ? 0 : new PlanSweep(database, dialect).dropUnnamed(planCandidates);
        if (!dryRun && loads > 0 && dialect == Dialect.POSTGRESQL) {
            progress.printf(Locale.ROOT, "  loads and plans dropped in %.1f s; vacuuming what was deleted by row%n", (System.nanoTime() - started) / 1e9);
            progress.flush();
            WholeMonths.vacuum(database, progress);
        }
        return new Result(rule.toString(), dryRun, touched, loads, decisions, plans, anchors,
                months == null ? List.of() : months.dropped());
    }

    /** The loads of one deployment to drop, and the chain's new anchor when its start goes. */
    static DeploymentPlan plan(Connection c, String deployment, Rule rule) throws SQLException {
        Set<String> kept = kept(c, deployment);
        Map<String, Old> rows = old(c, deployment, rule);
        Set<String> old = new HashSet<>(rows.keySet());
        old.removeAll(kept);
        // The chain goes from its start only: the longest run of entries whose loads all go (read no further).
        Set<String> drop = new LinkedHashSet<>();
        ChainHead anchor = null;
        for (HashChain.Entry e : HashChain.prefix(c, deployment, old::contains)) {
            drop.add(e.loadId());
            anchor = new ChainHead(deployment, e.seq(), e.loadId(), e.entryHash());
        }
        // Loads the chain does not hold (incomplete ones, or stored before the chain existed) go by age alone.
        Set<String> chained = chained(c, deployment, old, rows);
        old.stream().filter(id -> !chained.contains(id)).sorted().forEach(drop::add);
        return new DeploymentPlan(deployment, List.copyOf(drop), anchor, rows);
    }

    /** Those of the loads that are in the deployment's chain: linked on their row, or entered before V20. */
    private static Set<String> chained(Connection c, String deployment, Set<String> loads, Map<String, Old> rows) throws SQLException {
        Set<String> chained = new HashSet<>();
        loads.stream().filter(id -> rows.get(id).chained()).forEach(chained::add);
        for (List<String> chunk : InList.chunks(List.copyOf(loads))) {
            try (PreparedStatement s = InList.prepare(c, "SELECT load_id FROM chain_entries_legacy WHERE deployment_id = ? AND load_id IN (%s)",
                    chunk, 2)) {
                s.setString(1, deployment);
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        chained.add(rs.getString(1));
                    }
                }
            }
        }
        return chained;
    }

    /** What the prune reads of each load, after the columns a query names first. */
    private static final String OLD = "occurred_at, chain_seq, tensor_count, plan_bytes, is_head, model_id, release_name";

    private static Old row(ResultSet rs, int first) throws SQLException {
        rs.getLong(first + 1);
        boolean chained = !rs.wasNull();
        return new Old(rs.getTimestamp(first).toInstant(), chained, rs.getLong(first + 2), rs.getBytes(first + 3), rs.getBoolean(first + 4),
                rs.getString(first + 5), rs.getString(first + 6));
    }

    private static Map<String, Old> old(Connection c, String deployment, Rule rule) throws SQLException {
        Map<String, Old> old = new HashMap<>();
        if (rule instanceof Rule.Before before) {
            // By deployment and time (V26), and on PostgreSQL only in the months before the cutoff.
            try (PreparedStatement s = c.prepareStatement("SELECT load_id, " + OLD + " FROM load_rows WHERE deployment_id = ? AND occurred_at < ?")) {
                s.setString(1, deployment);
                s.setTimestamp(2, Timestamp.from(before.cutoff()));
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        old.put(rs.getString(1), row(rs, 2));
                    }
                }
            }
            return old;
        }
        int keep = ((Rule.KeepReleases) rule).releases();
        // Per model: its releases, newest first by their latest load in the log; the loads of all but the first `keep` go.
        Map<String, Map<String, LoadRef.Position>> latestByModelAndRelease = new HashMap<>();
        Map<String, List<String[]>> loadsByModel = new HashMap<>();
        Map<String, Old> all = new HashMap<>();
        try (PreparedStatement s = c.prepareStatement("SELECT load_id, summary_partition, summary_offset, " + OLD + " FROM load_rows "
                + "WHERE deployment_id = ?")) {
            s.setString(1, deployment);
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    Old row = row(rs, 4);
                    all.put(rs.getString(1), row);
                    latestByModelAndRelease.computeIfAbsent(row.model(), m -> new HashMap<>())
                            .merge(row.release(), new LoadRef.Position(rs.getInt(2), rs.getLong(3)), (a, b) -> a.compareTo(b) >= 0 ? a : b);
                    loadsByModel.computeIfAbsent(row.model(), m -> new ArrayList<>()).add(new String[]{rs.getString(1), row.release()});
                }
            }
        }
        latestByModelAndRelease.forEach((model, releases) -> {
            Set<String> newest = new HashSet<>(releases.entrySet().stream()
                    .sorted(Map.Entry.<String, LoadRef.Position>comparingByValue().reversed().thenComparing(Map.Entry.comparingByKey()))
                    .limit(keep).map(Map.Entry::getKey).toList());
            loadsByModel.get(model).stream().filter(l -> !newest.contains(l[1])).forEach(l -> old.put(l[0], all.get(l[0])));
        });
        return old;
    }

    /**
     * The latest complete load of each of the deployment's models, and the load each was (or would be) compared with.
     * The latest is marked on its row (V29), so the marks are all that is read, not every load or head of the deployment.
     */
    private static Set<String> kept(Connection c, String deployment) throws SQLException {
        List<LoadRef> latest = new ArrayList<>();
        try (PreparedStatement s = c.prepareStatement("SELECT l." + LoadRef.COLUMNS.replace(", ", ", l.") + " FROM loads l WHERE "
                + "l.deployment_id = ? AND l.load_id IN (SELECT h.load_id FROM load_rows h WHERE h.deployment_id = ? AND h.is_head = TRUE AND h.is_latest = TRUE)")) {
            s.setString(1, deployment);
            s.setString(2, deployment);
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    latest.add(RegressionDetector.ref(rs));
                }
            }
        }
        Set<String> kept = new HashSet<>();
        for (LoadRef load : latest) {
            kept.add(load.loadId());
            RegressionDetector.previous(c, load).ifPresent(previous -> kept.add(previous.loadId()));
        }
        return kept;
    }

    /**
     * Drops the loads and all that hangs on them; returns their plans, which {@link PlanSweep} drops once every
     * deployment is done if no load names them any more.
     */
    private Set<String> delete(Connection c, DeploymentPlan plan, WholeMonths months) throws SQLException {
        // Their plans, the releases whose head goes (model, release), and those in a month dropped whole.
        Set<String> planDigests = new HashSet<>();
        Set<List<String>> headsGone = new HashSet<>();
        List<String> byRow = new ArrayList<>();
        for (String id : plan.loadIds()) {
            Old row = plan.rows().get(id);
            if (row.plan() != null) {
                planDigests.add(StoredPlans.hex(row.plan()));
            }
            if (row.head()) {
                headsGone.add(List.of(row.model(), row.release()));
            }
            if (months == null || !months.take(id, row.occurredAt())) {
                byRow.add(id);
            }
        }
        for (List<String> chunk : InList.chunks(byRow)) {
            for (String[] dependent : WholeMonths.DEPENDENTS) {
                update(c, "DELETE FROM " + dependent[0] + " WHERE " + dependent[1] + " IN (%s)", chunk);
            }
            // Their sites and builds stay (load_sites, load_builds): a few rows a deployment, never updated, which
            // another instance may be naming in a load it writes now.
            update(c, "DELETE FROM load_rows WHERE load_id IN (%s)", chunk);
        }
        // The chain's start: its entries up to the new anchor (those of loads in the drop list, by construction): those
        // kept on the load rows went with them; those chained before V20 are in a table of their own.
        if (plan.anchor() != null) {
            try (PreparedStatement s = c.prepareStatement("DELETE FROM chain_entries_legacy WHERE deployment_id = ? AND seq <= ?")) {
                s.setString(1, plan.deploymentId());
                s.setLong(2, plan.anchor().seq());
                s.executeUpdate();
            }
        }
        // The releases whose head went get the latest load left marked, if any: those releases only (marking looks at
        // every load of what it is given: all of a deployment's, a year of them, cost a prune 27 ms a deployment); after
        // the months dropped whole are gone, when there are any.
        List<List<String>> remarks = headsGone.stream().map(r -> List.of(plan.deploymentId(), r.get(0), r.get(1))).toList();
        if (months != null) {
            months.remarkAfter(remarks);
        } else {
            remark(c, remarks);
        }
        if (plan.anchor() != null) {
            try (PreparedStatement s = c.prepareStatement(dialect.upsert("chain_anchors", List.of("deployment_id", "seq", "entry_hash", "pruned_at"),
                    List.of("VARCHAR(200)", "BIGINT", "BYTEA", "TIMESTAMP WITH TIME ZONE"), List.of("deployment_id")))) {
                s.setString(1, plan.deploymentId());
                s.setLong(2, plan.anchor().seq());
                s.setBytes(3, HashChain.bytes(plan.anchor().entryHash()));
                s.setTimestamp(4, Timestamp.from(Instant.now()));
                s.executeUpdate();
            }
        }
        return planDigests;
    }

    /** Marks the latest load left of each release (deployment, model, release) whose head was dropped. */
    static void remark(Connection c, List<List<String>> releases) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(ReleaseHeads.REMARK + " AND l.model_id = ? AND l.release_name = ?")) {
            for (List<String> release : releases) {
                for (int i = 0; i < 3; i++) {
                    s.setString(i + 1, release.get(i));
                }
                s.addBatch();
            }
            if (!releases.isEmpty()) {
                s.executeBatch();
            }
        }
    }

    private static void update(Connection c, String sql, List<String> ids) throws SQLException {
        try (PreparedStatement s = InList.prepare(c, sql, ids)) {
            s.executeUpdate();
        }
    }
}
