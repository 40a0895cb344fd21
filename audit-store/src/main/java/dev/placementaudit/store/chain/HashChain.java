package dev.placementaudit.store.chain;

import dev.placementaudit.schemas.PlanDigest;
import dev.placementaudit.store.db.ById;
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
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;

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
 * <p>Hashes are stored as their 32 bytes. What an entry can derive is not stored: its {@code prev_hash} is the hash of
 * the entry before it (or of the chain's anchor, or {@link #GENESIS}), an encoding-2 entry's {@code decisions_hash} is
 * the plan digest its load's row names (both since V11), and its {@code load_hash} is its load's row hashed (since
 * V20). An entry is kept on its load's row since V20 ({@code load_rows.chain_seq}, {@code chain_hash}), and its
 * deployment's lock row keeps the chain's head; entries written before stay in {@code chain_entries_legacy} with what
 * they stored, which verification checks where present. The {@code chain_entries} view reads both.
 *
 * <p>Entries are made when loads complete, in the same transaction, before their rows are written ({@link #link}).
 * Within a batch they go in the order of their summaries in the log (partition, offset), and a deployment's loads
 * complete in that order anyway (its summaries share a partition, its decisions another, both read in order), so a
 * rebuild from the log writes the same chain: the chain is a function of the decision log.
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

    /** The encoding entries are written in now (those on load rows, {@link #link}). */
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
     * A completing load as its chain entry covers it: where its summary stands in the log (which orders the chain; -1
     * for none) and the values of its row in the order of {@link #LOAD_COLUMNS_2}, as they are stored.
     */
    public record Link(String loadId, String deploymentId, long partition, long offset, List<Object> row) {
    }

    /**
     * Chains these completing loads onto their deployments' chains, in log order of their summaries, each after the
     * entry before it ({@code tails}: each deployment's head before them, absent for a chain not started); returns the
     * entry each load gets, in chain order. Nothing is written: the entries go on the loads' rows as they are written
     * ({@code chain_seq}, {@code chain_hash}), in the transaction that completes them.
     */
    public static List<ChainHead> link(Collection<Link> completing, Map<String, ChainHead> tails) {
        List<Link> loads = new ArrayList<>(completing);
        loads.sort(Comparator.comparingLong(Link::partition).thenComparingLong(Link::offset).thenComparing(Link::loadId));
        Map<String, ChainHead> heads = new HashMap<>(tails);
        List<ChainHead> entries = new ArrayList<>(loads.size());
        for (Link load : loads) {
            ChainHead previous = heads.get(load.deploymentId());
            String loadHash = hex(sha256().digest(canonical(load.row())));
            String entryHash = entryHash(previous == null ? GENESIS : previous.entryHash(), loadHash, (String) load.row().get(LOAD_COLUMNS.size()));
            ChainHead entry = new ChainHead(load.deploymentId(), previous == null ? 1 : previous.seq() + 1, load.loadId(), entryHash);
            heads.put(load.deploymentId(), entry);
            entries.add(entry);
        }
        return entries;
    }

    /**
     * Where each of these deployments' chains goes on from: its head as its lock row keeps it ({@code heads}), else its
     * anchor when retention dropped every entry before the head was kept there; absent for a chain not started.
     */
    public static Map<String, ChainHead> tails(Connection c, Map<String, ChainHead> heads, Collection<String> deploymentIds) throws SQLException {
        Map<String, ChainHead> tails = new HashMap<>(heads);
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

    /** Every deployment's head, for publishing them all (at start-up): as its lock row keeps it. */
    public static List<ChainHead> heads(Connection c) throws SQLException {
        return Sql.list(c, "SELECT deployment_id, chain_seq, chain_load_id, chain_hash FROM deployment_locks WHERE chain_seq IS NOT NULL "
                + "ORDER BY deployment_id", rs -> new ChainHead(rs.getString(1), rs.getLong(2), rs.getString(3), hex(rs.getBytes(4))));
    }

    /** A chain entry's columns, as {@link #entry} reads them. */
    private static final String ENTRY_SELECT = "SELECT deployment_id, seq, load_id, prev_hash, load_hash, decisions_hash, entry_hash, encoding "
            + "FROM chain_entries WHERE deployment_id = ? ";

    /** A deployment's entries in chain order (by seq). */
    public static List<Entry> entries(Connection c, String deploymentId) throws SQLException {
        return Sql.list(c, ENTRY_SELECT + "ORDER BY seq", HashChain::entry, deploymentId);
    }

    /**
     * The longest run of a deployment's entries from its start whose loads {@code take} accepts: read in order, a page
     * at a time, and no further than the first it refuses (retention cuts a chain at its start only).
     */
    public static List<Entry> prefix(Connection c, String deploymentId, Predicate<String> take) throws SQLException {
        List<Entry> prefix = new ArrayList<>();
        try (PreparedStatement s = c.prepareStatement(ENTRY_SELECT + "ORDER BY seq")) {
            s.setFetchSize(256);
            s.setString(1, deploymentId);
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    Entry e = entry(rs);
                    if (!take.test(e.loadId())) {
                        break;
                    }
                    prefix.add(e);
                }
            }
        }
        return prefix;
    }

    /** A deployment's entries after position {@code seq}, in order: what a verify since a mark reads. */
    public static List<Entry> entriesAfter(Connection c, String deploymentId, long seq) throws SQLException {
        return Sql.list(c, ENTRY_SELECT + "AND seq > ? ORDER BY seq", HashChain::entry, deploymentId, seq);
    }

    /** The entry at position {@code seq} of a deployment's chain, if there is one. */
    public static Optional<Entry> entryAt(Connection c, String deploymentId, long seq) throws SQLException {
        return Sql.first(c, ENTRY_SELECT + "AND seq = ?", HashChain::entry, deploymentId, seq);
    }

    private static Entry entry(ResultSet rs) throws SQLException {
        return new Entry(rs.getString(1), rs.getLong(2), rs.getString(3), hex(rs.getBytes(4)), hex(rs.getBytes(5)), hex(rs.getBytes(6)),
                hex(rs.getBytes(7)), rs.getInt(8));
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
                // An entry of the first encoding is over a row written before load_ids (V30) and is read as it was then.
                + " FROM loads WHERE " + (encoding == 1 ? "load_id = ?" : ById.is("")), rs -> new LoadRow(hex(sha256().digest(canonical(values(rs, 2, columns.size())))), rs.getString(1)), loadId);
    }

    /**
     * The rows of these entries' loads as {@link #loadRow} reads them, in the entries' order: those of entries in the
     * current encoding read by chunks of ids (a verify of a day's 24,000 new loads asked 24,000 times before).
     */
    public static List<Optional<LoadRow>> loadRows(Connection c, List<Entry> entries) throws SQLException {
        Map<String, LoadRow> byId = new HashMap<>();
        List<String> current = entries.stream().filter(e -> e.encoding() != 1).map(Entry::loadId).distinct().toList();
        for (List<String> chunk : InList.chunks(current)) {
            try (PreparedStatement s = InList.prepare(c, "SELECT load_id, plan_digest, " + String.join(", ", LOAD_COLUMNS_2)
                    + " FROM loads WHERE " + ById.in(""), chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    byId.put(rs.getString(1), new LoadRow(hex(sha256().digest(canonical(values(rs, 3, LOAD_COLUMNS_2.size())))), rs.getString(2)));
                }
            }
        }
        List<Optional<LoadRow>> rows = new ArrayList<>(entries.size());
        for (Entry e : entries) {
            rows.add(e.encoding() == 1 ? loadRow(c, e.loadId(), 1) : Optional.ofNullable(byId.get(e.loadId())));
        }
        return rows;
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
                    sha.update(canonical(values(rs, 1, DECISION_COLUMNS.size())));
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
    public static String hex(byte[] digest) {
        return digest == null ? null : HexFormat.of().formatHex(digest);
    }

    /** A hash as it is stored: its bytes. */
    public static byte[] bytes(String hex) {
        return HexFormat.of().parseHex(hex);
    }

    /**
     * {@code columns} values of the row, starting at column {@code from}, as {@link #canonical} encodes them: a time as a
     * {@link Timestamp}, whatever the driver's own type for it.
     */
    public static List<Object> values(ResultSet rs, int from, int columns) throws SQLException {
        List<Object> values = new ArrayList<>(columns);
        for (int i = from; i < from + columns; i++) {
            Object value = rs.getObject(i);
            values.add(value == null || value instanceof String || value instanceof Boolean || value instanceof Number ? value : rs.getTimestamp(i));
        }
        return values;
    }

    /** The canonical encoding of a row's values (text, integers, booleans, times; null). */
    private static byte[] canonical(List<Object> values) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(512);
        for (Object value : values) {
            if (value == null) {
                out.write(0);
            } else if (value instanceof CharSequence text) {
                byte[] utf8 = text.toString().getBytes(StandardCharsets.UTF_8);
                out.write(1);
                out.writeBytes(ByteBuffer.allocate(4).putInt(utf8.length).array());
                out.writeBytes(utf8);
            } else if (value instanceof Boolean bool) {
                out.write(3);
                out.write(bool ? 1 : 0);
            } else if (value instanceof Number number) {
                out.write(2);
                out.writeBytes(ByteBuffer.allocate(8).putLong(number.longValue()).array());
            } else if (value instanceof Timestamp time) {
                out.write(4);
                out.writeBytes(ByteBuffer.allocate(8).putLong(time.getTime()).array());
            } else {
                throw new IllegalArgumentException("no canonical encoding of " + value.getClass().getName());
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
}
