package dev.placementaudit.store.ingest;

import dev.placementaudit.store.chain.ChainHead;
import dev.placementaudit.store.chain.HashChain;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A row per deployment in {@code deployment_locks} (docs/adr/0003): locked by the transaction that checks the
 * deployment's loads for completion, and holding how far its decisions have come (docs/adr/0006) and the head of its
 * hash chain (docs/adr/0015), which only the transaction holding the lock appends to.
 */
final class DeploymentLocks {
    private final String insert;

    DeploymentLocks(Dialect dialect) {
        this.insert = dialect.insertIgnoringDuplicates("deployment_locks", List.of("deployment_id"), List.of("VARCHAR(200)"), "deployment_id");
    }

    /**
     * What this transaction read of the deployments it locked: how far each one's decisions have come (with this
     * batch's), which of them this batch moved on, and each one's chain head (absent where none is kept yet).
     */
    record Locked(Map<String, Long> decidedThrough, Set<String> decidedMoved, Map<String, ChainHead> chainHeads) {
    }

    /**
     * Takes the lock of each deployment the batch touched, in one order (no deadlock between instances), before its
     * loads are checked for completion, and reads its row. The rows this transaction wrote are already in; a concurrent
     * transaction that wrote the rest of a load waits here until this one commits, and its next statement sees these
     * rows (PostgreSQL and H2 read committed data afresh per statement): so exactly one of the two completes the load,
     * compares it with its predecessor, raises its alerts and chains it, and the deployment's chain grows in one order.
     *
     * @param deployments    sorted: chunk after chunk, the locks are taken in one order
     * @param decidedInBatch the highest {@code model-loads} offset of the batch's decisions, per deployment: a
     *                       deployment's decisions come in the order of its loads, so a load before that offset has had
     *                       every decision it will get, and one that is still not complete never will be
     *                       ({@link LoadCompletion})
     */
    Locked lock(Connection c, Set<String> deployments, Map<String, Long> decidedInBatch) throws SQLException {
        Map<String, Long> decided = new HashMap<>();
        Set<String> moved = new HashSet<>();
        Map<String, ChainHead> heads = new HashMap<>();
        if (deployments.isEmpty()) {
            return new Locked(decided, moved, heads);
        }
        try (PreparedStatement s = c.prepareStatement(insert)) {
            for (String deployment : deployments) {
                s.setString(1, deployment);
                s.addBatch();
            }
            s.executeBatch();
        }
        for (List<String> chunk : InList.chunks(deployments)) {
            try (PreparedStatement lock = InList.prepare(c, "SELECT deployment_id, decided_through, chain_seq, chain_load_id, chain_hash "
                    + "FROM deployment_locks WHERE deployment_id IN (%s) ORDER BY deployment_id FOR UPDATE", chunk)) {
                try (ResultSet rs = lock.executeQuery()) {
                    while (rs.next()) {
                        String deployment = rs.getString(1);
                        long through = rs.getLong(2);
                        if (!rs.wasNull()) {
                            decided.put(deployment, through);
                        }
                        long seq = rs.getLong(3);
                        if (!rs.wasNull()) {
                            heads.put(deployment, new ChainHead(deployment, seq, rs.getString(4), HashChain.hex(rs.getBytes(5))));
                        }
                    }
                }
            }
        }
        decidedInBatch.forEach((deployment, through) -> {
            Long stored = decided.get(deployment);
            if (stored == null || stored < through) {
                decided.put(deployment, through);
                moved.add(deployment);
            }
        });
        return new Locked(decided, moved, heads);
    }

    /**
     * Keeps on each locked row what this batch moved on: how far its decisions have come, and its chain's new head. One
     * update a row however much changed (each update leaves a row version behind until vacuumed).
     */
    void record(Connection c, Locked locked, Collection<ChainHead> newHeads) throws SQLException {
        Map<String, ChainHead> heads = new TreeMap<>(locked.chainHeads());
        Set<String> changed = new TreeSet<>(locked.decidedMoved());
        for (ChainHead head : newHeads) {
            heads.put(head.deploymentId(), head);
            changed.add(head.deploymentId());
        }
        if (changed.isEmpty()) {
            return;
        }
        try (PreparedStatement update = c.prepareStatement("UPDATE deployment_locks SET decided_through = ?, chain_seq = ?, chain_load_id = ?, "
                + "chain_hash = ? WHERE deployment_id = ?")) {
            for (String deployment : changed) {
                ChainHead head = heads.get(deployment);
                update.setObject(1, locked.decidedThrough().get(deployment), Types.BIGINT);
                update.setObject(2, head == null ? null : head.seq(), Types.BIGINT);
                update.setString(3, head == null ? null : head.loadId());
                update.setBytes(4, head == null ? null : HashChain.bytes(head.entryHash()));
                update.setString(5, deployment);
                update.addBatch();
            }
            update.executeBatch();
        }
    }
}
