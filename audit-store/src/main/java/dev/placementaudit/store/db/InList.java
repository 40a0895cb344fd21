package dev.placementaudit.store.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/** A statement over a list of ids, {@code ... IN (?, ?, ...)} with the ids bound, in chunks any database takes. */
public final class InList {
    /** Ids per statement: far below PostgreSQL's 32,767 parameters and H2's limits, few enough to plan quickly. */
    public static final int CHUNK = 500;

    private InList() {
    }

    /** @param sql the statement with {@code %s} where the placeholders go, e.g. {@code DELETE FROM decisions WHERE load_id IN (%s)} */
    public static PreparedStatement prepare(Connection c, String sql, List<?> ids) throws SQLException {
        return prepare(c, sql, ids, 1);
    }

    /**
     * The same, for a statement with parameters of its own before the list: the ids are bound from {@code firstIndex};
     * the caller binds the rest. Ids are text or numbers (a dimension's keys), each bound as its own type.
     */
    public static PreparedStatement prepare(Connection c, String sql, List<?> ids, int firstIndex) throws SQLException {
        PreparedStatement s = c.prepareStatement(String.format(sql, String.join(", ", Collections.nCopies(ids.size(), "?"))));
        try {
            for (int i = 0; i < ids.size(); i++) {
                s.setObject(i + firstIndex, ids.get(i));
            }
        } catch (SQLException e) {
            s.close();
            throw e;
        }
        return s;
    }

    /**
     * The first column of every row the query returns, run over all the ids chunk by chunk, in the order met.
     *
     * @param sql a query with {@code %s} where the placeholders go, e.g. {@code SELECT plan_digest FROM plans WHERE plan_digest IN (%s)}
     */
    public static Set<String> strings(Connection c, String sql, Collection<String> ids) throws SQLException {
        Set<String> values = new LinkedHashSet<>();
        for (List<String> chunk : chunks(ids)) {
            try (PreparedStatement s = prepare(c, sql, chunk); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    values.add(rs.getString(1));
                }
            }
        }
        return values;
    }

    /** The ids, in their order, {@link #CHUNK} at a time. */
    public static <T> List<List<T>> chunks(Collection<T> ids) {
        List<T> all = List.copyOf(ids);
        List<List<T>> chunks = new ArrayList<>();
        for (int from = 0; from < all.size(); from += CHUNK) {
            chunks.add(all.subList(from, Math.min(all.size(), from + CHUNK)));
        }
        return chunks;
    }
}
