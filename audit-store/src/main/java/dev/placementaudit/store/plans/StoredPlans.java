package dev.placementaudit.store.plans;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.schemas.PlanDigest;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.db.Sql;
import org.postgresql.PGConnection;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * The {@code plans} table and the {@code plan_tensors} view: each placement plan once, named by its {@link PlanDigest}.
 * A plan's tensors are kept as {@code plan_rows} (plan, index, row id) naming {@code tensor_rows}, each distinct tensor
 * row once, named by {@link #rowId} (its content): a new plan that shares most of its tensors with stored plans (a
 * re-encoded weight, a renamed tensor, another release of the same model) writes one narrow row per tensor and only the
 * tensor rows no plan had. {@code plan_tensors} joins the two, as the table of that name used to hold them.
 *
 * <p>A new plan's rows go in by PostgreSQL's binary {@code COPY} (H2: one batched insert), in the ingesting transaction;
 * a plan already stored costs nothing. A batch's plan rows are inserted ignoring duplicates (one statement on
 * PostgreSQL), and a plan's tensors only by the transaction whose insert took: a concurrent instance building the same
 * plan waits on the plan's key, then finds it there. Tensor rows are inserted ignoring duplicates, in id order, so two
 * instances adding the same new tensor rows wait on each other in one order and never deadlock. Tensor rows are never
 * updated or deleted (retention removes plans' rows, not the tensor rows they named).
 */
public final class StoredPlans {
    private static final Pattern DIGEST = Pattern.compile("[0-9a-f]{64}");
    private static final String COPY = "COPY plan_rows (plan_digest, tensor_index, row_id) FROM STDIN (FORMAT binary)";
    /** {@link PlanDigest#COLUMNS} as {@code tensor_rows} types them. */
    private static final List<String> TENSOR_TYPES = PlanDigest.COLUMNS.stream().map(column -> switch (column) {
        case "tensor_index" -> "INTEGER";
        case "element_count", "stored_bytes", "resident_bytes" -> "BIGINT";
        case "size_estimated", "mapping_requested" -> "BOOLEAN";
        default -> "VARCHAR(4000)";
    }).toList();

    private final Dialect dialect;
    private final String insertPlan;
    private final String insertTensorRow;

    public StoredPlans(Dialect dialect) {
        this.dialect = dialect;
        this.insertPlan = dialect.insertIgnoringDuplicates("plans", List.of("plan_digest", "tensor_count", "placement_signature"),
                List.of("VARCHAR(64)", "INTEGER", "VARCHAR(64)"), "plan_digest");
        List<String> columns = new ArrayList<>(List.of("row_id"));
        columns.addAll(PlanDigest.COLUMNS);
        List<String> types = new ArrayList<>(List.of("VARCHAR(32)"));
        types.addAll(TENSOR_TYPES);
        this.insertTensorRow = dialect.insertIgnoringDuplicates("tensor_rows", columns, types, "row_id");
    }

    /**
     * What names a tensor row: the first 32 hex characters (128 bits) of the digest of the one-tensor plan that holds
     * just this tensor ({@link PlanDigest}'s encoding, so no second encoding to define). Equal values, equal id.
     */
    public static String rowId(Object[] values) {
        return new PlanDigest().tensor(values).digest().substring(0, 32);
    }

    /** A plan to store: its digest and its tensors' values ({@link PlanDigest#values}), in tensor order. */
    private record PlanRows(String digest, List<Object[]> tensors) {
    }

    /** A plan built from one load's decisions, all of them, in tensor order. */
    public record NewPlan(String digest, List<AllocationDecided> decisions) {
        public List<TensorPlacement> placements() {
            return decisions.stream().map(StoredPlans::placement).toList();
        }

        /** Each tensor's values, as {@link PlanDigest#values}: what a decision that names the plan must carry. */
        public List<Object[]> values() {
            return decisions.stream().map(PlanDigest::values).toList();
        }
    }

    /** The digest an event carries when it is one (64 lower-case hex characters), else null: the store computes it. */
    public static String carried(String digest) {
        return digest != null && DIGEST.matcher(digest).matches() ? digest : null;
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
        writeTensors(c, inserted.stream().map(plan -> new PlanRows(plan.digest(), plan.values())).toList());
        return inserted.stream().mapToInt(p -> p.decisions().size()).sum();
    }

    /**
     * The tensors of plans this transaction has just inserted: the tensor rows no stored plan has (inserted ignoring
     * duplicates, in id order), then every plan's narrow rows naming them.
     */
    private void writeTensors(Connection c, List<PlanRows> plans) throws SQLException {
        Map<String, Object[]> distinct = new TreeMap<>();
        List<String[]> planRows = new ArrayList<>();
        for (PlanRows plan : plans) {
            for (Object[] values : plan.tensors()) {
                String id = rowId(values);
                distinct.putIfAbsent(id, values);
                planRows.add(new String[]{plan.digest(), values[0].toString(), id});
            }
        }
        distinct.keySet().removeAll(InList.strings(c, "SELECT row_id FROM tensor_rows WHERE row_id IN (%s)", distinct.keySet()));
        if (!distinct.isEmpty()) {
            try (PreparedStatement s = c.prepareStatement(insertTensorRow)) {
                for (Map.Entry<String, Object[]> row : distinct.entrySet()) {
                    s.setString(1, row.getKey());
                    Object[] values = row.getValue();
                    for (int i = 0; i < values.length; i++) {
                        s.setObject(i + 2, values[i]);
                    }
                    s.addBatch();
                }
                s.executeBatch();
            }
        }
        if (dialect == Dialect.POSTGRESQL) {
            copy(c, planRows);
        } else {
            try (PreparedStatement s = c.prepareStatement("INSERT INTO plan_rows (plan_digest, tensor_index, row_id) VALUES (?, ?, ?)")) {
                for (String[] row : planRows) {
                    Sql.bind(s, row[0], Integer.parseInt(row[1]), row[2]);
                    s.addBatch();
                }
                s.executeBatch();
            }
        }
    }

    /**
     * Builds the plan of a load whose decisions were staged in {@code decisions} (they came in several batches, or
     * from events that carry no digest): digests them as stored, stores the plan if it is new (its tensors copied
     * from the staged rows, inside the database), and returns its digest.
     */
    public Built fromStaged(Connection c, String loadId, String resolverVersion) throws SQLException {
        PlanDigest digest = new PlanDigest();
        List<TensorPlacement> placements = new ArrayList<>();
        List<Object[]> tensors = new ArrayList<>();
        try (PreparedStatement s = c.prepareStatement("SELECT " + String.join(", ", PlanDigest.COLUMNS) + " FROM decisions "
                + "WHERE load_id = ? AND resolver_version = ? ORDER BY tensor_index")) {
            s.setString(1, loadId);
            s.setString(2, resolverVersion);
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    Object[] values = PlanValues.read(rs, 1);
                    tensors.add(values);
                    digest.tensor(values);
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
                writeTensors(c, List.of(new PlanRows(plan, tensors)));
            }
        }
        return new Built(plan, signature);
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
     * The plans' narrow rows by {@code COPY ... FROM STDIN} in PostgreSQL's binary format: no text is escaped and the
     * server parses no number. The stream: the format's signature, flags and header extension length; each row as its
     * field count, then each field as its length and bytes (UTF-8 text, a big-endian integer); -1 at the end.
     */
    private static void copy(Connection c, List<String[]> rows) throws SQLException {
        try {
            Buffer buffer = new Buffer();
            DataOutputStream out = new DataOutputStream(buffer);
            out.write(BINARY_SIGNATURE);
            out.writeInt(0); // flags
            out.writeInt(0); // header extension length
            for (String[] row : rows) {
                out.writeShort(3);
                text(out, row[0]);
                out.writeInt(4);
                out.writeInt(Integer.parseInt(row[1]));
                text(out, row[2]);
            }
            out.writeShort(-1);
            c.unwrap(PGConnection.class).getCopyAPI().copyIn(COPY, new ByteArrayInputStream(buffer.bytes(), 0, buffer.size()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The binary COPY format's 11-byte signature. */
    private static final byte[] BINARY_SIGNATURE = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', (byte) 0xFF, '\r', '\n', 0};

    private static void text(DataOutputStream out, String value) throws IOException {
        byte[] utf8 = value.getBytes(StandardCharsets.UTF_8);
        out.writeInt(utf8.length);
        out.write(utf8);
    }

    /** A byte buffer whose bytes are read in place. */
    private static final class Buffer extends ByteArrayOutputStream {
        Buffer() {
            super(80 * 1024);
        }

        byte[] bytes() {
            return buf;
        }
    }
}
