package dev.placementaudit.store.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

/** A statement over a list of ids, {@code ... IN (?, ?, ...)} with the ids bound, in chunks any database takes. */
public final class InList {
    /** Ids per statement: far below PostgreSQL's 32,767 parameters and H2's limits, few enough to plan quickly. */
    public static final int CHUNK = 500;

    private InList() {
    }

    /** @param sql the statement with {@code %s} where the placeholders go, e.g. {@code DELETE FROM loads WHERE load_id IN (%s)} */
    public static PreparedStatement prepare(Connection c, String sql, List<String> ids) throws SQLException {
        PreparedStatement s = c.prepareStatement(String.format(sql, String.join(", ", Collections.nCopies(ids.size(), "?"))));
        try {
            for (int i = 0; i < ids.size(); i++) {
                s.setString(i + 1, ids.get(i));
            }
        } catch (SQLException e) {
            s.close();
            throw e;
        }
        return s;
    }

    /** The ids, in their order, {@link #CHUNK} at a time. */
    public static List<List<String>> chunks(Collection<String> ids) {
        List<String> all = List.copyOf(ids);
        List<List<String>> chunks = new ArrayList<>();
        for (int from = 0; from < all.size(); from += CHUNK) {
            chunks.add(all.subList(from, Math.min(all.size(), from + CHUNK)));
        }
        return chunks;
    }
}
