package dev.placementaudit.store.chain;

import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.Sql;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Where the last {@code store verify} found each chain to agree with a head published to the log
 * ({@code chain_verifications}, V25): the next verify starts after it when the log still says the same
 * ({@link ChainVerifier#verifySinceLastMark}). A store not yet migrated to V25 has no marks: every verify is whole.
 */
public final class VerificationMarks {
    private static final List<String> COLUMNS = List.of("deployment_id", "seq", "load_id", "entry_hash", "verified_at");
    private static final List<String> TYPES = List.of("VARCHAR(200)", "BIGINT", "VARCHAR(36)", "VARCHAR(64)", "TIMESTAMP WITH TIME ZONE");

    private VerificationMarks() {
    }

    /** The marks, by deployment (of one deployment when given); none when the store has no table for them yet. */
    static Map<String, ChainHead> read(Connection c, Optional<String> deployment) throws SQLException {
        Map<String, ChainHead> marks = new HashMap<>();
        if (!exists(c)) {
            return marks;
        }
        String sql = "SELECT deployment_id, seq, load_id, entry_hash FROM chain_verifications" + (deployment.isPresent() ? " WHERE deployment_id = ?" : "");
        Sql.list(c, sql, rs -> new ChainHead(rs.getString(1), rs.getLong(2), rs.getString(3), rs.getString(4)),
                deployment.map(d -> new Object[]{d}).orElse(new Object[0])).forEach(mark -> marks.put(mark.deploymentId(), mark));
        return marks;
    }

    /**
     * Records where each chain of the report found intact was verified to; returns how many marks were written (0 when the
     * store has no table for them yet: it was made by an older store; the next {@code store run} migrates it).
     */
    public static int write(Connection c, Dialect dialect, ChainVerifier.Report report, Instant now) throws SQLException {
        if (!report.checkedAgainstLog() || !exists(c)) {
            return 0;
        }
        int written = 0;
        try (PreparedStatement s = c.prepareStatement(dialect.upsert("chain_verifications", COLUMNS, TYPES, List.of("deployment_id")))) {
            for (ChainVerifier.Chain chain : report.chains()) {
                ChainHead to = chain.verifiedTo();
                if (to != null) {
                    Sql.bind(s, chain.deploymentId(), to.seq(), to.loadId(), to.entryHash(), Timestamp.from(now));
                    s.addBatch();
                    written++;
                }
            }
            s.executeBatch();
        }
        if (!c.getAutoCommit()) {
            c.commit();
        }
        return written;
    }

    private static boolean exists(Connection c) throws SQLException {
        String schema = c.getSchema();
        for (String name : List.of("chain_verifications", "CHAIN_VERIFICATIONS")) {
            try (var rs = c.getMetaData().getTables(null, schema, name, null)) {
                if (rs.next()) {
                    return true;
                }
            }
        }
        return false;
    }
}
