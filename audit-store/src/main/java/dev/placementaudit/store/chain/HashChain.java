package dev.placementaudit.store.chain;

import dev.placementaudit.schemas.PlanDigest;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.plans.PlanValues;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The projection's tamper-evident chain: one entry per completed load, chained per deployment,
 * {@code entry_hash = SHA-256(prev_hash || load_hash || decisions_hash)} over the 32-byte digests, the first entry's
 * {@code prev_hash} being 32 zero bytes. {@code load_hash} covers the load's row in the canonical encoding below, over
 * the columns that come from the log alone (no wall-clock of this store's own). How {@code decisions_hash} covers the
 * load's decisions is the entry's {@code encoding}:
 * <ul>
 * <li>2 (since placement plans): the load's plan digest ({@link PlanDigest}), which its
 *     load hash covers too ({@link #LOAD_COLUMNS_2}). Verification recomputes the digest from the plan's stored
 *     tensors, so a changed plan row breaks every entry of every load that names the plan.</li>
 * <li>1 (entries written before): SHA-256 over the load's decision rows in tensor order, each in the canonical
 *     encoding of {@link #DECISION_COLUMNS}; those rows stay in {@code decisions} for it.</li>
 * </ul>
 *
 * <p>Canonical encoding of a row: its columns in the documented order, each as one tag byte and a value: {@code 0}
 * for SQL NULL; {@code 1}, a 4-byte big-endian length and UTF-8 bytes for text; {@code 2} and 8 big-endian bytes for
 * an integer; {@code 3} and one byte (0 or 1) for a boolean; {@code 4} and 8 big-endian bytes of epoch milliseconds
 * for a time.
 *
 * <p>Hashes are stored as their 32 bytes. What an entry can derive is not stored (NULL) since V11: its
 * {@code prev_hash} is the hash of the entry before it (or of the chain's anchor, or {@link #GENESIS}), and an
 * encoding-2 entry's {@code decisions_hash} is the plan digest its load's row names. Entries written before keep
 * both, and verification checks them where present.
 *
 * <p>Entries are appended when loads complete, in the same transaction. Within a batch they go in the order of their
 * summaries in the log (partition, offset), and a deployment's loads complete in that order anyway (its summaries
 * share a partition, its decisions another, both read in order), so a rebuild from the log writes the same chain:
 * the chain is a function of the decision log.
 */
public final class HashChain {
    /** The first entry's previous hash. */
    public static final String GENESIS = "0".repeat(64);
    /** The load's columns in the order {@link #loadHash} encodes them. */
    public static final List<String> LOAD_COLUMNS = List.of("load_id", "deployment_id", "cluster", "host", "release_name", "model_id",
            "model_name", "model_sha256", "platform_name", "profile_name", "occurred_at", "tensor_count", "stored_bytes", "resident_bytes",
            "heap_bytes", "offheap_bytes", "mapped_bytes", "heap_tensors", "offheap_tensors", "mapped_tensors", "resolver_version",
            "policy_digest", "resolved_at", "summary_partition", "summary_offset");
    /** The load's columns as encoding 2 hashes them: those of encoding 1, then the plan it names. */
    public static final List<String> LOAD_COLUMNS_2;

    static {
        List<String> columns = new ArrayList<>(LOAD_COLUMNS);
        columns.add("plan_digest");
        LOAD_COLUMNS_2 = List.copyOf(columns);
    }

    /** The encoding entries are written in now. */
    public static final int ENCODING = 2;
    /** A decision's columns in the order encoding 1 hashed them. */
    public static final List<String> DECISION_COLUMNS = List.of("decision_id", "load_id", "tensor_name", "tensor_index", "dtype",
            "stored_encoding", "stored_format", "element_count", "stored_bytes", "size_estimated", "resident_format", "resident_bytes",
            "memory_domain", "scope_kind", "mapping_requested", "reason_code", "placement_reason", "mapping_blockers", "reason",
            "resolver_version", "policy_digest", "source_partition", "source_offset");

    private HashChain() {
    }

    /**
     * One entry as stored, its hashes in hex; {@code prevHash} and {@code decisionsHash} null where not stored (see
     * the class comment).
     */
    public record Entry(String deploymentId, long seq, String loadId, String prevHash, String loadHash, String decisionsHash, String entryHash,
                        int encoding) {
    }

    /**
     * Appends an entry for each of these just-completed loads to its deployment's chain, in log order of their
     * summaries; returns the new head of each deployment touched.
     */
    public static List<ChainHead> append(Connection c, Collection<String> loadIds) throws SQLException {
        if (loadIds.isEmpty()) {
            return List.of();
        }
        List<Completed> loads = new ArrayList<>();
        for (List<String> chunk : InList.chunks(loadIds)) {
            try (PreparedStatement s = InList.prepare(c, "SELECT load_id, deployment_id, summary_partition, summary_offset, plan_digest, "
                    + String.join(", ", LOAD_COLUMNS_2) + " FROM loads WHERE load_id IN (%s)", chunk)) {
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        long partition = rs.getLong(3);
                        boolean noPartition = rs.wasNull();
                        long offset = rs.getLong(4);
                        boolean noOffset = rs.wasNull();
                        String loadHash = hex(sha256().digest(canonical(rs, 6, LOAD_COLUMNS_2.size())));
                        loads.add(new Completed(rs.getString(1), rs.getString(2), noPartition ? -1 : partition, noOffset ? -1 : offset,
                                loadHash, rs.getString(5)));
                    }
                }
            }
        }
        loads.sort(Comparator.comparingLong(Completed::partition).thenComparingLong(Completed::offset).thenComparing(Completed::loadId));
        Map<String, ChainHead> heads = new LinkedHashMap<>();
        Map<String, ChainHead> before = tails(c, loads.stream().map(Completed::deploymentId).distinct().toList());
        try (PreparedStatement insert = c.prepareStatement("INSERT INTO chain_entries (deployment_id, seq, load_id, prev_hash, load_hash, "
                + "decisions_hash, entry_hash, encoding) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")) {
            for (Completed load : loads) {
                ChainHead previous = heads.getOrDefault(load.deploymentId(), before.get(load.deploymentId()));
                long seq = previous == null ? 1 : previous.seq() + 1;
                String prev = previous == null ? GENESIS : previous.entryHash();
                String loadHash = load.loadHash();
                String decisionsHash = load.planDigest();
                String entryHash = entryHash(prev, loadHash, decisionsHash);
                insert.setString(1, load.deploymentId());
                insert.setLong(2, seq);
                insert.setString(3, load.loadId());
                insert.setNull(4, Types.BINARY);
                insert.setBytes(5, bytes(loadHash));
                insert.setNull(6, Types.BINARY);
                insert.setBytes(7, bytes(entryHash));
                insert.setInt(8, ENCODING);
                insert.addBatch();
                heads.put(load.deploymentId(), new ChainHead(load.deploymentId(), seq, load.loadId(), entryHash));
            }
            insert.executeBatch();
        }
        return List.copyOf(heads.values());
    }

    /**
     * Where each of these deployments' chains goes on from: its last entry, or its anchor when retention dropped every
     * entry; absent for a chain not started. Two queries, however many deployments.
     */
    private static Map<String, ChainHead> tails(Connection c, List<String> deploymentIds) throws SQLException {
        Map<String, ChainHead> tails = new HashMap<>();
        for (List<String> chunk : InList.chunks(deploymentIds)) {
            try (PreparedStatement s = InList.prepare(c, "SELECT e.deployment_id, e.seq, e.load_id, e.entry_hash FROM chain_entries e "
                    + "WHERE e.deployment_id IN (%s) AND e.seq = (SELECT MAX(m.seq) FROM chain_entries m WHERE m.deployment_id = e.deployment_id)",
                    chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    tails.put(rs.getString(1), new ChainHead(rs.getString(1), rs.getLong(2), rs.getString(3), hex(rs.getBytes(4))));
                }
            }
        }
        List<String> unstarted = deploymentIds.stream().filter(d -> !tails.containsKey(d)).toList();
        for (List<String> chunk : InList.chunks(unstarted)) {
            try (PreparedStatement s = InList.prepare(c, "SELECT deployment_id, seq, entry_hash FROM chain_anchors WHERE deployment_id IN (%s)",
                    chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    tails.put(rs.getString(1), new ChainHead(rs.getString(1), rs.getLong(2), null, hex(rs.getBytes(3))));
                }
            }
        }
        return tails;
    }

    /** Where a pruned chain starts: the last entry retention dropped (its load id is not kept). */
    public static Optional<ChainHead> anchor(Connection c, String deploymentId) throws SQLException {
        return Sql.first(c, "SELECT seq, entry_hash FROM chain_anchors WHERE deployment_id = ?",
                rs -> new ChainHead(deploymentId, rs.getLong(1), null, hex(rs.getBytes(2))), deploymentId);
    }

    /** Every deployment's anchor, for publishing them (after a prune). */
    public static List<ChainHead> anchors(Connection c) throws SQLException {
        return Sql.list(c, "SELECT deployment_id, seq, entry_hash FROM chain_anchors ORDER BY deployment_id",
                rs -> new ChainHead(rs.getString(1), rs.getLong(2), null, hex(rs.getBytes(3))));
    }

    /** Every deployment's head, for publishing them all (at start-up). */
    public static List<ChainHead> heads(Connection c) throws SQLException {
        return Sql.list(c, "SELECT e.deployment_id, e.seq, e.load_id, e.entry_hash FROM chain_entries e "
                + "WHERE e.seq = (SELECT MAX(m.seq) FROM chain_entries m WHERE m.deployment_id = e.deployment_id) ORDER BY e.deployment_id",
                rs -> new ChainHead(rs.getString(1), rs.getLong(2), rs.getString(3), hex(rs.getBytes(4))));
    }

    /** A deployment's entries in chain order (by seq). */
    public static List<Entry> entries(Connection c, String deploymentId) throws SQLException {
        return Sql.list(c, "SELECT deployment_id, seq, load_id, prev_hash, load_hash, decisions_hash, entry_hash, encoding FROM chain_entries "
                + "WHERE deployment_id = ? ORDER BY seq", rs -> new Entry(rs.getString(1), rs.getLong(2), rs.getString(3), hex(rs.getBytes(4)),
                hex(rs.getBytes(5)), hex(rs.getBytes(6)), hex(rs.getBytes(7)), rs.getInt(8)), deploymentId);
    }

    /** The load row's hash as it is stored now, in the entry's encoding; empty when there is no such row. */
    public static Optional<String> loadHash(Connection c, String loadId, int encoding) throws SQLException {
        return loadRow(c, loadId, encoding).map(LoadRow::hash);
    }

    /**
     * A load's row as the chain sees it now: its hash in an entry's encoding, and the plan it names (null for none, and
     * for encoding 1, which stores its decisions' hash).
     */
    public record LoadRow(String hash, String planDigest) {
    }

    /** The load's row as it is stored now, hashed in the entry's encoding; empty when there is no such row. */
    public static Optional<LoadRow> loadRow(Connection c, String loadId, int encoding) throws SQLException {
        List<String> columns = encoding == 1 ? LOAD_COLUMNS : LOAD_COLUMNS_2;
        return Sql.first(c, "SELECT " + (encoding == 1 ? "CAST(NULL AS VARCHAR(64))" : "plan_digest") + ", " + String.join(", ", columns)
                + " FROM loads WHERE load_id = ?", rs -> new LoadRow(hex(sha256().digest(canonical(rs, 2, columns.size()))), rs.getString(1)), loadId);
    }

    /**
     * A plan's digest recomputed from its stored tensors, and how many it has: what an encoding-2 entry's decisions
     * hash must equal. A plan with no tensor stored has no digest (empty).
     */
    public static Decisions plan(Connection c, String planDigest) throws SQLException {
        PlanDigest digest = new PlanDigest();
        int count = 0;
        try (PreparedStatement s = c.prepareStatement("SELECT " + String.join(", ", PlanDigest.COLUMNS)
                + " FROM plan_tensors WHERE plan_digest = ? ORDER BY tensor_index")) {
            s.setString(1, planDigest);
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    digest.tensor(PlanValues.read(rs, 1));
                    count++;
                }
            }
        }
        return new Decisions(count, count == 0 ? "" : digest.digest());
    }

    /** The hash of every decision of the load (under its resolver version) in tensor order, as stored now. */
    public static String decisionsHash(Connection c, String loadId) throws SQLException {
        return decisions(c, loadId).hash();
    }

    /** The load's decisions as the chain covers them: how many, and their hash. */
    public record Decisions(int count, String hash) {
    }

    public static Decisions decisions(Connection c, String loadId) throws SQLException {
        try (PreparedStatement s = c.prepareStatement("SELECT " + String.join(", ", DECISION_COLUMNS.stream().map(col -> "d." + col).toList())
                + " FROM decisions d JOIN loads l ON l.load_id = d.load_id AND l.resolver_version = d.resolver_version "
                + "WHERE d.load_id = ? ORDER BY d.tensor_index, d.decision_id")) {
            s.setString(1, loadId);
            try (ResultSet rs = s.executeQuery()) {
                MessageDigest sha = sha256();
                int count = 0;
                while (rs.next()) {
                    sha.update(canonical(rs, 1, DECISION_COLUMNS.size()));
                    count++;
                }
                return new Decisions(count, HexFormat.of().formatHex(sha.digest()));
            }
        }
    }

    public static String entryHash(String prevHash, String loadHash, String decisionsHash) {
        MessageDigest sha = sha256();
        sha.update(HexFormat.of().parseHex(prevHash));
        sha.update(HexFormat.of().parseHex(loadHash));
        sha.update(HexFormat.of().parseHex(decisionsHash));
        return HexFormat.of().formatHex(sha.digest());
    }

    /** A stored hash in hex; null for none. */
    private static String hex(byte[] digest) {
        return digest == null ? null : HexFormat.of().formatHex(digest);
    }

    /** A hash as it is stored: its bytes. */
    public static byte[] bytes(String hex) {
        return HexFormat.of().parseHex(hex);
    }

    /** The canonical encoding of {@code columns} values of the row, starting at column {@code from}. */
    private static byte[] canonical(ResultSet rs, int from, int columns) throws SQLException {
        ByteArrayOutputStream out = new ByteArrayOutputStream(512);
        for (int i = from; i < from + columns; i++) {
            Object value = rs.getObject(i);
            if (value == null) {
                out.write(0);
            } else if (value instanceof String text) {
                byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
                out.write(1);
                out.writeBytes(ByteBuffer.allocate(4).putInt(utf8.length).array());
                out.writeBytes(utf8);
            } else if (value instanceof Boolean bool) {
                out.write(3);
                out.write(bool ? 1 : 0);
            } else if (value instanceof Number number) {
                out.write(2);
                out.writeBytes(ByteBuffer.allocate(8).putLong(number.longValue()).array());
            } else {
                Timestamp time = rs.getTimestamp(i);
                out.write(4);
                out.writeBytes(ByteBuffer.allocate(8).putLong(time.getTime()).array());
            }
        }
        return out.toByteArray();
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM ships SHA-256", e);
        }
    }

    private record Completed(String loadId, String deploymentId, long partition, long offset, String loadHash, String planDigest) {
    }
}
