package dev.placementaudit.store.plans;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.schemas.PlanDigest;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.db.Sql;
import org.postgresql.PGConnection;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The {@code plans} and {@code plan_tensors} tables: each placement plan once, named by its {@link PlanDigest}. A new
 * plan's tensors go in by PostgreSQL's binary {@code COPY}, as one row of arrays (V22: {@code plan_tensors} is a view
 * of them there), or on H2 as a row each, by one batched insert, in the ingesting transaction; a
 * plan already stored costs nothing. A batch's plan rows are inserted ignoring duplicates (one statement on
 * PostgreSQL), and a plan's tensors only by the transaction whose insert took: a concurrent instance building the same
 * plan waits on the plan's key, then finds it there.
 */
public final class StoredPlans {
    private static final Pattern DIGEST = Pattern.compile("[0-9a-f]{64}");
    static final List<String> TENSOR_COLUMNS;
    private static final String COPY;
    private static final String ARRAYS;

    static {
        List<String> columns = new ArrayList<>();
        columns.add("plan_digest");
        columns.addAll(PlanDigest.COLUMNS);
        TENSOR_COLUMNS = List.copyOf(columns);
        COPY = "COPY plan_tensor_arrays (" + String.join(", ", TENSOR_COLUMNS) + ") FROM STDIN (FORMAT binary)";
        ARRAYS = TENSOR_COLUMNS.stream().skip(1).map(column -> "array_agg(" + column + " ORDER BY tensor_index)").collect(Collectors.joining(", "));
    }

    private final Dialect dialect;
    private final String insertPlan;

    public StoredPlans(Dialect dialect) {
        this.dialect = dialect;
        this.insertPlan = dialect.insertIgnoringDuplicates("plans", List.of("plan_digest", "tensor_count", "placement_signature"),
                List.of("VARCHAR(64)", "INTEGER", "VARCHAR(64)"), "plan_digest");
    }

    /**
     * A plan built from one load's decisions, all of them, in tensor order; with where each tensor lands and each
     * tensor's values ({@link PlanDigest#values}: what a decision that names the plan must carry), built once: the
     * plan's signature, its {@code COPY}, the cache and later loads of it in the batch all read them.
     */
    public record NewPlan(String digest, List<AllocationDecided> decisions, List<TensorPlacement> placements, List<Object[]> values) {
        public NewPlan(String digest, List<AllocationDecided> decisions) {
            this(digest, decisions, decisions.stream().map(StoredPlans::placement).toList(), decisions.stream().map(PlanDigest::values).toList());
        }
    }

    /** The digest an event carries when it is one (64 lower-case hex characters), else null: the store computes it. */
    public static String carried(String digest) {
        return digest != null && DIGEST.matcher(digest).matches() ? digest : null;
    }

    /** A plan's digest as the 32 bytes a load row keeps (V19); null for null. */
    public static byte[] bytes(String digest) {
        return digest == null ? null : HexFormat.of().parseHex(digest);
    }

    /** A digest stored as its 32 bytes, as the lower-case hex every reader names it by; null for none. */
    public static String hex(byte[] digest) {
        return digest == null ? null : HexFormat.of().formatHex(digest);
    }

    /** Which of these plans are stored (committed, or written by this transaction). */
    public static Set<String> stored(Connection c, Collection<String> digests) throws SQLException {
        return InList.strings(c, "SELECT plan_digest FROM plans WHERE plan_digest IN (%s)", digests);
    }

    /** Which of these loads have decisions staged. */
    public static Set<String> staged(Connection c, Collection<String> loadIds) throws SQLException {
        return InList.strings(c, "SELECT DISTINCT load_id FROM decisions WHERE load_id IN (%s)", loadIds);
    }

    /** Where each tensor of a stored plan lands, in tensor order. */
    public static List<TensorPlacement> placements(Connection c, String planDigest) throws SQLException {
        return Sql.list(c, "SELECT tensor_name, tensor_index, memory_domain, resident_bytes, stored_format, resident_format, reason_code, "
                + "mapping_blockers, reason FROM plan_tensors WHERE plan_digest = ? ORDER BY tensor_index", rs -> new TensorPlacement(rs.getString(1),
                rs.getInt(2), rs.getString(3), rs.getLong(4), rs.getString(5), rs.getString(6), rs.getString(7), rs.getString(8), rs.getString(9)),
                planDigest);
    }

    /** A stored plan's tensors, each as {@link PlanDigest#values} (the types a decision's values have), in tensor order. */
    public static List<Object[]> tensorValues(Connection c, String digest) throws SQLException {
        List<Object[]> tensors = new ArrayList<>();
        try (PreparedStatement s = c.prepareStatement("SELECT " + String.join(", ", PlanDigest.COLUMNS) + " FROM plan_tensors "
                + "WHERE plan_digest = ? ORDER BY tensor_index")) {
            s.setString(1, digest);
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    tensors.add(PlanValues.read(rs, 1));
                }
            }
        }
        return tensors;
    }

    /**
     * Stores the plans not stored yet, with their tensors; returns how many tensor rows that wrote. Plan rows go in
     * in digest order, so two instances inserting some of the same plans wait on each other's keys in one order and
     * never deadlock.
     */
    public int write(Connection c, Collection<NewPlan> plans) throws SQLException {
        List<NewPlan> sorted = plans.stream().sorted(Comparator.comparing(NewPlan::digest)).toList();
        List<NewPlan> inserted = new ArrayList<>();
        if (dialect == Dialect.POSTGRESQL && !sorted.isEmpty()) {
            // One statement for the batch's plans, which says which of them it inserted.
            String[] digests = sorted.stream().map(NewPlan::digest).toArray(String[]::new);
            Integer[] counts = sorted.stream().map(plan -> plan.decisions().size()).toArray(Integer[]::new);
            String[] signatures = sorted.stream().map(plan -> signature(plan.placements())).toArray(String[]::new);
            Set<String> taken = new HashSet<>();
            try (PreparedStatement s = c.prepareStatement("INSERT INTO plans (plan_digest, tensor_count, placement_signature) SELECT * FROM "
                    + "unnest(?::varchar[], ?::int[], ?::varchar[]) ON CONFLICT (plan_digest) DO NOTHING RETURNING plan_digest")) {
                s.setArray(1, c.createArrayOf("varchar", digests));
                s.setArray(2, c.createArrayOf("int4", counts));
                s.setArray(3, c.createArrayOf("varchar", signatures));
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        taken.add(rs.getString(1));
                    }
                }
            }
            sorted.stream().filter(plan -> taken.contains(plan.digest())).forEach(inserted::add);
        } else {
            try (PreparedStatement s = c.prepareStatement(insertPlan)) {
                for (NewPlan plan : sorted) {
                    s.setString(1, plan.digest());
                    s.setInt(2, plan.decisions().size());
                    s.setString(3, signature(plan.placements()));
                    if (s.executeUpdate() == 1) {
                        inserted.add(plan);
                    }
                }
            }
        }
        if (inserted.isEmpty()) {
            return 0;
        }
        if (dialect == Dialect.POSTGRESQL) {
            copy(c, inserted);
        } else {
            try (PreparedStatement s = c.prepareStatement("INSERT INTO plan_tensors (" + String.join(", ", TENSOR_COLUMNS) + ") VALUES ("
                    + TENSOR_COLUMNS.stream().map(col -> "?").collect(Collectors.joining(", ")) + ")")) {
                for (NewPlan plan : inserted) {
                    for (Object[] values : plan.values()) {
                        s.setString(1, plan.digest());
                        for (int i = 0; i < values.length; i++) {
                            s.setObject(i + 2, values[i]);
                        }
                        s.addBatch();
                    }
                }
                s.executeBatch();
            }
        }
        return inserted.stream().mapToInt(p -> p.decisions().size()).sum();
    }

    /**
     * Builds the plan of a load whose decisions were staged in {@code decisions} (they came in several batches, or
     * from events that carry no digest): digests them as stored, stores the plan if it is new (its tensors copied
     * from the staged rows, inside the database), and returns its digest.
     */
    public Built fromStaged(Connection c, String loadId, String resolverVersion) throws SQLException {
        PlanDigest digest = new PlanDigest();
        List<TensorPlacement> placements = new ArrayList<>();
        try (PreparedStatement s = c.prepareStatement("SELECT " + String.join(", ", PlanDigest.COLUMNS) + " FROM decisions "
                + "WHERE load_id = ? AND resolver_version = ? ORDER BY tensor_index")) {
            s.setString(1, loadId);
            s.setString(2, resolverVersion);
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    digest.tensor(PlanValues.read(rs, 1));
                    placements.add(new TensorPlacement(rs.getString("tensor_name"), rs.getInt("tensor_index"), rs.getString("memory_domain"),
                            rs.getLong("resident_bytes"), rs.getString("stored_format"), rs.getString("resident_format"),
                            rs.getString("reason_code"), rs.getString("mapping_blockers"), rs.getString("reason")));
                }
            }
        }
        String plan = digest.digest();
        String signature = signature(placements);
        try (PreparedStatement s = c.prepareStatement(insertPlan)) {
            s.setString(1, plan);
            s.setInt(2, placements.size());
            s.setString(3, signature);
            if (s.executeUpdate() == 1) {
                String staged = "SELECT ? AS plan_digest, " + String.join(", ", PlanDigest.COLUMNS) + " FROM decisions WHERE load_id = ? "
                        + "AND resolver_version = ?";
                try (PreparedStatement copy = c.prepareStatement(dialect == Dialect.POSTGRESQL ? insertRows(staged)
                        : "INSERT INTO plan_tensors (" + String.join(", ", TENSOR_COLUMNS) + ") " + staged)) {
                    copy.setString(1, plan);
                    copy.setString(2, loadId);
                    copy.setString(3, resolverVersion);
                    copy.executeUpdate();
                }
            }
        }
        return new Built(plan, signature);
    }

    /** The table a plan's tensors are written to: on PostgreSQL one row per plan, its columns arrays (V22). */
    public static String tensorTable(Dialect dialect) {
        return dialect == Dialect.POSTGRESQL ? "plan_tensor_arrays" : "plan_tensors";
    }

    /**
     * On PostgreSQL, the statement that stores as plans the tensor rows a query gives (its columns named as
     * {@code plan_tensors}' are, any order), each plan's in one row of arrays in tensor order.
     */
    public static String insertRows(String select) {
        return "INSERT INTO plan_tensor_arrays (" + String.join(", ", TENSOR_COLUMNS) + ") SELECT plan_digest, " + ARRAYS + " FROM (" + select
                + ") t GROUP BY plan_digest";
    }

    /** A plan built from staged decisions: its digest and its placement signature. */
    public record Built(String digest, String signature) {
    }

    /** SHA-256 over every (tensor, domain) in tensor order: what loads.placement_signature has always held. */
    static String signature(List<TensorPlacement> placements) {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        placements.forEach(t -> sha.update((t.name() + "=" + t.domain() + "\n").getBytes(StandardCharsets.UTF_8)));
        return HexFormat.of().formatHex(sha.digest());
    }

    /** A decision as a plan holds it. */
    public static TensorPlacement placement(AllocationDecided d) {
        return new TensorPlacement(d.getTensorName(), d.getTensorIndex(), d.getDomain().name(), d.getResidentBytes(), d.getStoredFormat(),
                d.getResidentFormat(), d.getReasonCode().name(), PlanDigest.blockers(d.getMappingBlockers()), d.getReason());
    }

    /**
     * COPY ... FROM STDIN in PostgreSQL's binary format into {@code plan_tensor_arrays} (V22): a row per plan, each of
     * {@link PlanDigest#COLUMNS} an array in tensor order, streamed from the decoded events about 64 KiB at a time: no
     * text is escaped and the server parses no number. A row: the field count, then each field as its length and
     * bytes (the digest as UTF-8; an array as its dimensions, flags, element type and bounds, then each element as its
     * length and bytes: UTF-8 for text, big-endian for integers, one byte for a boolean); the stream starts with the
     * format's signature and ends with -1.
     */
    private static void copy(Connection c, List<NewPlan> plans) throws SQLException {
        try {
            c.unwrap(PGConnection.class).getCopyAPI().copyIn(COPY, new InputStream() {
                private final Buffer out = new Buffer(80 * 1024);
                private boolean started;
                private boolean ended;
                private int plan;
                private int at;

                @Override
                public int read(byte[] target, int offset, int length) {
                    while (at == out.size()) {
                        if (!fill()) {
                            return -1;
                        }
                    }
                    int n = Math.min(length, out.size() - at);
                    System.arraycopy(out.bytes(), at, target, offset, n);
                    at += n;
                    return n;
                }

                @Override
                public int read() {
                    byte[] one = new byte[1];
                    return read(one, 0, 1) < 0 ? -1 : one[0] & 0xFF;
                }

                private boolean fill() {
                    out.reset();
                    at = 0;
                    if (!started) {
                        out.bytes(BINARY_SIGNATURE);
                        out.int4(0); // flags
                        out.int4(0); // header extension length
                        started = true;
                    }
                    while (out.size() < 64 * 1024 && plan < plans.size()) {
                        NewPlan p = plans.get(plan++);
                        List<Object[]> tensors = p.values();
                        out.int2(1 + BINARY_COLUMNS.length);
                        out.text(p.digest());
                        for (int column = 0; column < BINARY_COLUMNS.length; column++) {
                            int length = out.reserveInt4();
                            out.int4(1); // dimensions
                            out.int4(0); // flags: no nulls
                            out.int4(BINARY_COLUMNS[column].oid);
                            out.int4(tensors.size());
                            out.int4(1); // lower bound
                            for (Object[] values : tensors) {
                                element(out, BINARY_COLUMNS[column], values[column], p.digest(), column);
                            }
                            out.lengthSince(length);
                        }
                    }
                    if (plan == plans.size() && !ended) {
                        out.int2(-1);
                        ended = true;
                    }
                    return out.size() > 0;
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The binary COPY format's 11-byte signature. */
    private static final byte[] BINARY_SIGNATURE = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', (byte) 0xFF, '\r', '\n', 0};

    /** How each of {@link PlanDigest#COLUMNS} goes in binary: by its column's element type, with that type's oid. */
    private enum Binary {
        INT4(23), INT8(20), BOOL(16), VARCHAR(1043);

        final int oid;

        Binary(int oid) {
            this.oid = oid;
        }
    }

    private static final Binary[] BINARY_COLUMNS = PlanDigest.COLUMNS.stream().map(column -> switch (column) {
        case "tensor_index" -> Binary.INT4;
        case "element_count", "stored_bytes", "resident_bytes" -> Binary.INT8;
        case "size_estimated", "mapping_requested" -> Binary.BOOL;
        default -> Binary.VARCHAR;
    }).toArray(Binary[]::new);

    private static void element(Buffer out, Binary type, Object value, String digest, int column) {
        if (value == null) {
            // Decoded events carry every value; a null would be a tensor the plan cannot hold.
            throw new IllegalArgumentException("plan " + digest + ": a tensor has no " + PlanDigest.COLUMNS.get(column));
        }
        switch (type) {
            case INT4 -> {
                out.int4(4);
                out.int4(((Number) value).intValue());
            }
            case INT8 -> {
                out.int4(8);
                out.int8(((Number) value).longValue());
            }
            case BOOL -> {
                out.int4(1);
                out.int1((Boolean) value ? 1 : 0);
            }
            case VARCHAR -> out.text(value.toString());
        }
    }

    /**
     * The bytes of a {@code COPY} being written, big-endian, read in place. Not a {@code DataOutputStream} over a
     * {@code ByteArrayOutputStream}: that takes a lock per byte of every length, millions of times for a batch of new
     * plans.
     */
    private static final class Buffer {
        private static final VarHandle INT = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);
        private static final VarHandle LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
        private byte[] bytes;
        private int size;

        Buffer(int capacity) {
            bytes = new byte[capacity];
        }

        byte[] bytes() {
            return bytes;
        }

        int size() {
            return size;
        }

        void reset() {
            size = 0;
        }

        void int1(int value) {
            room(1);
            bytes[size++] = (byte) value;
        }

        void int2(int value) {
            room(2);
            bytes[size++] = (byte) (value >> 8);
            bytes[size++] = (byte) value;
        }

        void int4(int value) {
            room(4);
            INT.set(bytes, size, value);
            size += 4;
        }

        void int8(long value) {
            room(8);
            LONG.set(bytes, size, value);
            size += 8;
        }

        void bytes(byte[] value) {
            room(value.length);
            System.arraycopy(value, 0, bytes, size, value.length);
            size += value.length;
        }

        /** A value as its length and its UTF-8 bytes. */
        void text(String value) {
            byte[] utf8 = value.getBytes(StandardCharsets.UTF_8);
            int4(utf8.length);
            bytes(utf8);
        }

        /** Leaves room for a length written later ({@link #lengthSince}); returns where. */
        int reserveInt4() {
            int at = size;
            int4(0);
            return at;
        }

        /** Writes, where {@link #reserveInt4} left room, how many bytes came after it. */
        void lengthSince(int at) {
            INT.set(bytes, at, size - at - 4);
        }

        private void room(int more) {
            if (size + more > bytes.length) {
                bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, size + more));
            }
        }
    }
}
