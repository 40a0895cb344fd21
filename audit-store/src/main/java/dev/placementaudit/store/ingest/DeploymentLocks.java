package dev.placementaudit.store.ingest;

import dev.placementaudit.store.chain.ChainHead;
import dev.placementaudit.store.chain.HashChain;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Collection;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * A row per deployment in {@code deployment_locks} (docs/adr/0003): locked by the transaction that checks the
 * deployment's loads for completion, and holding how far its decisions have come (docs/adr/0006) and the head of its
 * hash chain (docs/adr/0015), which only the transaction holding the lock appends to.
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
     * @return the head of each deployment's hash chain as its row keeps it (absent where none is kept yet)
     */
    Map<String, ChainHead> lock(Connection c, Set<String> deployments) throws SQLException {
        Map<String, ChainHead> heads = new HashMap<>();
        if (deployments.isEmpty()) {
            return heads;
        }
        try (PreparedStatement s = c.prepareStatement(insert)) {
            for (String deployment : deployments) {
                s.setString(1, deployment);
                s.addBatch();
            }
            s.executeBatch();
        }
        for (List<String> chunk : InList.chunks(deployments)) {
            try (PreparedStatement lock = InList.prepare(c, "SELECT deployment_id, chain_seq, chain_load_id, chain_hash FROM deployment_locks "
                    + "WHERE deployment_id IN (%s) ORDER BY deployment_id FOR UPDATE", chunk)) {
                try (ResultSet rs = lock.executeQuery()) {
                    while (rs.next()) {
                        long seq = rs.getLong(2);
                        if (!rs.wasNull()) {
                            heads.put(rs.getString(1), new ChainHead(rs.getString(1), seq, rs.getString(3), HexFormat.of().formatHex(rs.getBytes(4))));
                        }
                    }
                }
            }
        }
        return heads;
    }

    /** Keeps each deployment's new chain head on its row, which this transaction holds locked ({@link #lock}). */
    void advance(Connection c, Collection<ChainHead> heads) throws SQLException {
        if (heads.isEmpty()) {
            return;
        }
        try (PreparedStatement update = c.prepareStatement("UPDATE deployment_locks SET chain_seq = ?, chain_load_id = ?, chain_hash = ? "
                + "WHERE deployment_id = ?")) {
            for (ChainHead head : heads) {
                update.setLong(1, head.seq());
                update.setString(2, head.loadId());
                update.setBytes(3, HashChain.bytes(head.entryHash()));
                update.setString(4, head.deploymentId());
                update.addBatch();
            }
            update.executeBatch();
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
