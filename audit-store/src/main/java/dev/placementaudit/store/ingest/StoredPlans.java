package dev.placementaudit.store.ingest;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.schemas.PlanDigest;
import dev.placementaudit.store.db.Dialect;
import dev.placementaudit.store.db.InList;
import dev.placementaudit.store.regression.TensorPlacement;
import org.postgresql.PGConnection;

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
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The {@code plans} and {@code plan_tensors} tables: each placement plan once, named by its {@link PlanDigest}. A new
 * plan's tensors go in by PostgreSQL's {@code COPY} (H2: one batched insert), in the ingesting transaction; a plan
 * already stored costs nothing. A plan row is inserted ignoring duplicates, and its tensors only by the transaction
 * whose insert took: a concurrent instance building the same plan waits on the plan's key, then finds it there.
 */
final class StoredPlans {
    private static final Pattern DIGEST = Pattern.compile("[0-9a-f]{64}");
    static final List<String> TENSOR_COLUMNS;
    private static final String COPY;

    static {
        List<String> columns = new ArrayList<>();
        columns.add("plan_digest");
        columns.addAll(PlanDigest.COLUMNS);
        TENSOR_COLUMNS = List.copyOf(columns);
        COPY = "COPY plan_tensors (" + String.join(", ", TENSOR_COLUMNS) + ") FROM STDIN";
    }

    private final Dialect dialect;
    private final String insertPlan;

    StoredPlans(Dialect dialect) {
        this.dialect = dialect;
        this.insertPlan = dialect.insertIgnoringDuplicates("plans", List.of("plan_digest", "tensor_count", "placement_signature"),
                List.of("VARCHAR(64)", "INTEGER", "VARCHAR(64)"), "plan_digest");
    }

    /** A plan built from one load's decisions, all of them, in tensor order. */
    record NewPlan(String digest, List<AllocationDecided> decisions) {
        List<TensorPlacement> placements() {
            return decisions.stream().map(StoredPlans::placement).toList();
        }
    }

    /** The digest an event carries when it is one (64 lower-case hex characters), else null: the store computes it. */
    static String carried(String digest) {
        return digest != null && DIGEST.matcher(digest).matches() ? digest : null;
    }

    /** Which of these plans are stored (committed, or written by this transaction). */
    static Set<String> stored(Connection c, Collection<String> digests) throws SQLException {
        return InList.strings(c, "SELECT plan_digest FROM plans WHERE plan_digest IN (%s)", digests);
    }

    /** Which of these loads have decisions staged. */
    static Set<String> staged(Connection c, Collection<String> loadIds) throws SQLException {
        return InList.strings(c, "SELECT DISTINCT load_id FROM decisions WHERE load_id IN (%s)", loadIds);
    }

    /** A stored plan's tensors, each as {@link PlanDigest#values} (the types a decision's values have), in tensor order. */
    static List<Object[]> tensorValues(Connection c, String digest) throws SQLException {
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

    /** Stores the plans not stored yet, with their tensors; returns how many tensor rows that wrote. */
    int write(Connection c, Collection<NewPlan> plans) throws SQLException {
        List<NewPlan> inserted = new ArrayList<>();
        try (PreparedStatement s = c.prepareStatement(insertPlan)) {
            for (NewPlan plan : plans) {
                s.setString(1, plan.digest());
                s.setInt(2, plan.decisions().size());
                s.setString(3, signature(plan.placements()));
                if (s.executeUpdate() == 1) {
                    inserted.add(plan);
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
                    for (AllocationDecided d : plan.decisions()) {
                        s.setString(1, plan.digest());
                        Object[] values = PlanDigest.values(d);
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
    Built fromStaged(Connection c, String loadId, String resolverVersion) throws SQLException {
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
                try (PreparedStatement copy = c.prepareStatement("INSERT INTO plan_tensors (" + String.join(", ", TENSOR_COLUMNS) + ") SELECT ?, "
                        + String.join(", ", PlanDigest.COLUMNS) + " FROM decisions WHERE load_id = ? AND resolver_version = ?")) {
                    copy.setString(1, plan);
                    copy.setString(2, loadId);
                    copy.setString(3, resolverVersion);
                    copy.executeUpdate();
                }
            }
        }
        return new Built(plan, signature);
    }

    /** A plan built from staged decisions: its digest and its placement signature. */
    record Built(String digest, String signature) {
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

    static TensorPlacement placement(AllocationDecided d) {
        return new TensorPlacement(d.getTensorName(), d.getTensorIndex(), d.getDomain().name(), d.getResidentBytes(), d.getStoredFormat(),
                d.getResidentFormat(), d.getReasonCode().name(), PlanDigest.blockers(d.getMappingBlockers()), d.getReason());
    }

    /** COPY ... FROM STDIN in text format, streamed from the decoded events: no row is built twice. */
    private static void copy(Connection c, List<NewPlan> plans) throws SQLException {
        try {
            c.unwrap(PGConnection.class).getCopyAPI().copyIn(COPY, new java.io.Reader() {
                private final StringBuilder buffer = new StringBuilder(64 * 1024);
                private int plan;
                private int tensor;
                private int at;

                @Override
                public int read(char[] target, int offset, int length) {
                    while (at == buffer.length()) {
                        if (!fill()) {
                            return -1;
                        }
                    }
                    int n = Math.min(length, buffer.length() - at);
                    buffer.getChars(at, at + n, target, offset);
                    at += n;
                    return n;
                }

                private boolean fill() {
                    buffer.setLength(0);
                    at = 0;
                    while (buffer.length() < 32 * 1024 && plan < plans.size()) {
                        NewPlan p = plans.get(plan);
                        row(buffer, p.digest(), PlanDigest.values(p.decisions().get(tensor)));
                        if (++tensor == p.decisions().size()) {
                            tensor = 0;
                            plan++;
                        }
                    }
                    return buffer.length() > 0;
                }

                @Override
                public void close() {
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void row(StringBuilder out, String digest, Object[] values) {
        out.append(digest);
        for (Object value : values) {
            out.append('\t');
            if (value instanceof Boolean b) {
                out.append(b ? 't' : 'f');
            } else if (value instanceof String text) {
                escape(out, text);
            } else {
                out.append(value);
            }
        }
        out.append('\n');
    }

    /** COPY's text format: backslash, tab, newline and carriage return escaped; everything else as it is. */
    private static void escape(StringBuilder out, String text) {
        for (int i = 0; i < text.length(); i++) {
            char ch = text.charAt(i);
            switch (ch) {
                case '\\' -> out.append("\\\\");
                case '\t' -> out.append("\\t");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                default -> out.append(ch);
            }
        }
    }
}
