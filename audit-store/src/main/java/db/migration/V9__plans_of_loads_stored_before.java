package db.migration;

import dev.placementaudit.schemas.PlanDigest;
import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * Gives every load completed before placement plans (V8) its plan, built from its decision rows the way the store
 * builds one now, so that every query, which reads plans, sees it. Loads not complete yet are left: their decisions
 * are staged, and the store completes them as it always did. The decision rows of loads whose chain entry covers them
 * (encoding 1) stay, for {@code store verify}; those of loads never chained (stored before the chain) go, as the
 * plan now holds them. Findings, stored per load until now, become those of the pair of plans each compared load makes
 * (plan_findings; V10 then replaces the table by a view over them).
 */
public class V9__plans_of_loads_stored_before extends BaseJavaMigration {
    private static final Logger LOG = LoggerFactory.getLogger(V9__plans_of_loads_stored_before.class);

    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        List<String[]> loads = new ArrayList<>();
        try (PreparedStatement s = c.prepareStatement("SELECT load_id, resolver_version FROM loads WHERE complete = TRUE AND plan_digest IS NULL "
                + "ORDER BY load_id"); ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
                loads.add(new String[]{rs.getString(1), rs.getString(2)});
            }
        }
        if (loads.isEmpty()) {
            return;
        }
        LOG.info("giving the {} loads stored before placement plans their plans", loads.size());
        int plans = 0;
        for (int i = 0; i < loads.size(); i++) {
            if (plan(c, loads.get(i)[0], loads.get(i)[1])) {
                plans++;
            }
            if ((i + 1) % 10_000 == 0) {
                LOG.info("  {} of {} loads, {} plans", i + 1, loads.size(), plans);
            }
        }
        int pairs = findings(c);
        try (PreparedStatement s = c.prepareStatement("DELETE FROM decisions WHERE load_id IN (SELECT l.load_id FROM loads l WHERE l.complete = TRUE) "
                + "AND load_id NOT IN (SELECT e.load_id FROM chain_entries e)")) {
            s.executeUpdate();
        }
        LOG.info("{} loads now name {} plans; their findings are those of {} pairs of plans", loads.size(), plans, pairs);
    }

    /** Names each compared load's predecessor and its plan, and stores each pair's findings once; returns the pairs stored. */
    private static int findings(Connection c) throws SQLException {
        List<String[]> compared = new ArrayList<>();
        try (PreparedStatement s = c.prepareStatement("SELECT DISTINCT f.load_id, f.previous_load_id, f.from_release, p.plan_digest, l.plan_digest "
                + "FROM findings f JOIN loads l ON l.load_id = f.load_id LEFT JOIN loads p ON p.load_id = f.previous_load_id "
                + "WHERE l.plan_digest IS NOT NULL ORDER BY f.load_id"); ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
                compared.add(new String[]{rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5)});
            }
        }
        int pairs = 0;
        java.util.Set<String> stored = new java.util.HashSet<>();
        for (String[] load : compared) {
            try (PreparedStatement s = c.prepareStatement("UPDATE loads SET previous_load_id = ?, previous_release = ?, previous_plan_digest = ? "
                    + "WHERE load_id = ?")) {
                s.setString(1, load[1]);
                s.setString(2, load[2]);
                s.setString(3, load[3]);
                s.setString(4, load[0]);
                s.executeUpdate();
            }
            // A predecessor pruned before this version left no plan to name: its findings cannot be kept by pair.
            if (load[3] == null || !stored.add(load[3] + ">" + load[4])) {
                continue;
            }
            try (PreparedStatement s = c.prepareStatement("SELECT kind, tensor_name, before_domain, after_domain, before_bytes, after_bytes, "
                    + "before_format, after_format, before_reason, after_reason FROM findings WHERE load_id = ? ORDER BY kind, tensor_name");
                 PreparedStatement insert = c.prepareStatement("INSERT INTO plan_findings (from_plan, to_plan, seq, kind, tensor_name, "
                         + "before_domain, after_domain, before_bytes, after_bytes, before_format, after_format, before_reason, after_reason) "
                         + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
                s.setString(1, load[0]);
                try (ResultSet rs = s.executeQuery()) {
                    int seq = 0;
                    while (rs.next()) {
                        insert.setString(1, load[3]);
                        insert.setString(2, load[4]);
                        insert.setInt(3, seq++);
                        for (int i = 1; i <= 10; i++) {
                            insert.setObject(i + 3, rs.getObject(i));
                        }
                        insert.addBatch();
                    }
                }
                insert.executeBatch();
            }
            pairs++;
        }
        return pairs;
    }

    /** Builds and names the load's plan; true when the plan was new. */
    private static boolean plan(Connection c, String loadId, String resolverVersion) throws SQLException {
        PlanDigest digest = new PlanDigest();
        MessageDigest signature = sha256();
        int count = 0;
        try (PreparedStatement s = c.prepareStatement("SELECT " + String.join(", ", PlanDigest.COLUMNS) + " FROM decisions "
                + "WHERE load_id = ? AND resolver_version = ? ORDER BY tensor_index")) {
            s.setString(1, loadId);
            s.setString(2, resolverVersion);
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    Object[] values = new Object[PlanDigest.COLUMNS.size()];
                    for (int i = 0; i < values.length; i++) {
                        values[i] = rs.getObject(i + 1);
                    }
                    digest.tensor(values);
                    signature.update((rs.getString("tensor_name") + "=" + rs.getString("memory_domain") + "\n").getBytes(StandardCharsets.UTF_8));
                    count++;
                }
            }
        }
        String plan = digest.digest();
        boolean fresh;
        try (PreparedStatement s = c.prepareStatement("SELECT 1 FROM plans WHERE plan_digest = ?")) {
            s.setString(1, plan);
            try (ResultSet rs = s.executeQuery()) {
                fresh = !rs.next();
            }
        }
        if (fresh) {
            try (PreparedStatement s = c.prepareStatement("INSERT INTO plans (plan_digest, tensor_count, placement_signature) VALUES (?, ?, ?)")) {
                s.setString(1, plan);
                s.setInt(2, count);
                s.setString(3, HexFormat.of().formatHex(signature.digest()));
                s.executeUpdate();
            }
            try (PreparedStatement s = c.prepareStatement("INSERT INTO plan_tensors (plan_digest, " + String.join(", ", PlanDigest.COLUMNS)
                    + ") SELECT ?, " + String.join(", ", PlanDigest.COLUMNS) + " FROM decisions WHERE load_id = ? AND resolver_version = ?")) {
                s.setString(1, plan);
                s.setString(2, loadId);
                s.setString(3, resolverVersion);
                s.executeUpdate();
            }
        }
        try (PreparedStatement s = c.prepareStatement("UPDATE loads SET plan_digest = ? WHERE load_id = ?")) {
            s.setString(1, plan);
            s.setString(2, loadId);
            s.executeUpdate();
        }
        return fresh;
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
