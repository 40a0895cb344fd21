package dev.placementaudit.store.ingest;

import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * A row per deployment in {@code deployment_locks} (docs/adr/0003): locked by the transaction that checks the
 * deployment's loads for completion, and holding how far its decisions have come (docs/adr/0006).
 */
final class DeploymentLocks {
    private static final String RECORD_DECIDED_THROUGH = "UPDATE deployment_locks SET decided_through = CASE WHEN decided_through IS NULL "
            + "OR decided_through < ? THEN ? ELSE decided_through END WHERE deployment_id = ?";

    private final String insert;

    DeploymentLocks(Dialect dialect) {
        this.insert = dialect.insertIgnoringDuplicates("deployment_locks", List.of("deployment_id"), List.of("VARCHAR(200)"), "deployment_id");
    }

    /**
     * Takes the lock of each deployment the batch touched, in one order (no deadlock between instances), before its
     * loads are checked for completion. The rows this transaction wrote are already in; a concurrent transaction that
     * wrote the rest of a load waits here until this one commits, and its next statement sees these rows (PostgreSQL
     * and H2 read committed data afresh per statement): so exactly one of the two completes the load, compares it with
     * its predecessor, raises its alerts and chains it, and the deployment's chain grows in one order.
     *
     * @param deployments sorted: chunk after chunk, the locks are taken in one order
     */
    void lock(Connection c, Set<String> deployments) throws SQLException {
        if (deployments.isEmpty()) {
            return;
        }
        try (PreparedStatement s = c.prepareStatement(insert)) {
            for (String deployment : deployments) {
                s.setString(1, deployment);
                s.addBatch();
            }
            s.executeBatch();
        }
        for (List<String> chunk : InList.chunks(deployments)) {
            try (PreparedStatement lock = InList.prepare(c, "SELECT deployment_id FROM deployment_locks WHERE deployment_id IN (%s) "
                    + "ORDER BY deployment_id FOR UPDATE", chunk)) {
                try (ResultSet rs = lock.executeQuery()) {
                    while (rs.next()) {
                        rs.getString(1);
                    }
                }
            }
        }
    }

    /**
     * Keeps, per deployment, the highest {@code model-loads} offset of any decision seen: a deployment's decisions come in
     * the order of its loads, so a load before that offset has had every decision it will get, and one that is still not
     * complete never will be ({@link LoadCompletion}). Runs after {@link #lock}, on rows this transaction holds.
     */
    void recordDecidedThrough(Connection c, Map<String, Long> decidedThrough) throws SQLException {
        if (decidedThrough.isEmpty()) {
            return;
        }
        try (PreparedStatement update = c.prepareStatement(RECORD_DECIDED_THROUGH)) {
            for (Map.Entry<String, Long> deployment : new TreeMap<>(decidedThrough).entrySet()) {
                update.setLong(1, deployment.getValue());
                update.setLong(2, deployment.getValue());
                update.setString(3, deployment.getKey());
                update.addBatch();
            }
            update.executeBatch();
        }
    }
}
