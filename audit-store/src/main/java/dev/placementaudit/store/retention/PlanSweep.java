package dev.placementaudit.store.retention;

import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.plans.StoredPlans;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import javax.sql.DataSource;

/** Retention's last step: the plans of the pruned loads that no load names any more, with their tensors and findings. */
final class PlanSweep {
    private final DataSource database;
    private final Dialect dialect;

    PlanSweep(DataSource database, Dialect dialect) {
        this.database = database;
        this.dialect = dialect;
    }

    /**
     * Drops those of the pruned loads' plans that no load names any more, their tensors, and the findings of pairs of
     * plans no load makes; returns how many plans that was. The plans and pairs still named come from one scan of the
     * load rows, whatever the number of deployments pruned: the rows have no index by plan (one would cost every load
     * its entry to save a prune a scan), and asking per plan and deployment read every row each time (a prune of a
     * month of 480,000 loads did not end in 8 minutes). Only the pruned loads' plans are candidates: a plan just built
     * for a load whose summary has not come yet names no load either, and must stay. (A load whose decisions found an
     * old plan stored while its last other load was being dropped would find it gone: it stays incomplete, and a
     * rebuild restores it.)
     */
    int dropUnnamed(Set<String> candidates) throws SQLException {
        try (Connection c = database.getConnection()) {
            c.setAutoCommit(false);
            try {
                Set<String> named = new HashSet<>();
                Set<List<String>> pairs = new HashSet<>();
                try (PreparedStatement s = c.prepareStatement("SELECT DISTINCT plan_bytes, previous_plan_bytes FROM load_rows WHERE plan_bytes IS NOT NULL");
                     ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        String to = StoredPlans.hex(rs.getBytes(1));
                        named.add(to);
                        byte[] from = rs.getBytes(2);
                        if (from != null) {
                            pairs.add(List.of(StoredPlans.hex(from), to));
                        }
                    }
                }
                Set<List<String>> findings = new HashSet<>();
                for (List<String> chunk : InList.chunks(List.copyOf(candidates))) {
                    for (String side : List.of("to_plan", "from_plan")) {
                        try (PreparedStatement s = InList.prepare(c, "SELECT DISTINCT from_plan, to_plan FROM plan_findings WHERE " + side + " IN (%s)",
                                chunk); ResultSet rs = s.executeQuery()) {
                            while (rs.next()) {
                                findings.add(List.of(rs.getString(1), rs.getString(2)));
                            }
                        }
                    }
                }
                findings.removeAll(pairs);
                try (PreparedStatement s = c.prepareStatement("DELETE FROM plan_findings WHERE from_plan = ? AND to_plan = ?")) {
                    for (List<String> pair : findings) {
                        s.setString(1, pair.get(0));
                        s.setString(2, pair.get(1));
                        s.addBatch();
                    }
                    s.executeBatch();
                }
                List<String> unnamed = candidates.stream().filter(p -> !named.contains(p)).sorted().toList();
                int plans = 0;
                for (List<String> chunk : InList.chunks(unnamed)) {
                    try (PreparedStatement s = InList.prepare(c, "DELETE FROM " + StoredPlans.tensorTable(dialect) + " WHERE plan_digest IN (%s)", chunk)) {
                        s.executeUpdate();
                    }
                    try (PreparedStatement s = InList.prepare(c, "DELETE FROM plans WHERE plan_digest IN (%s)", chunk)) {
                        plans += s.executeUpdate();
                    }
                }
                c.commit();
                return plans;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            }
        }
    }
}
