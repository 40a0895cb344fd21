package dev.placementaudit.store.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * Query, bind, map rows: the few lines every read of the store repeats, written once. Parameters bind by position
 * ({@code null} as SQL NULL, an {@link Instant} as a timestamp); a statement's SQL is always a constant or built from
 * constants, never from input.
 */
public final class Sql {
    private Sql() {
    }

    /** Makes one value of a row, reading the row where the cursor is. */
    @FunctionalInterface
    public interface Row<T> {
        T map(ResultSet rs) throws SQLException;
    }

    /** Every row the query returns, mapped, in the order returned. */
    public static <T> List<T> list(Connection c, String sql, Row<T> row, Object... args) throws SQLException {
        try (PreparedStatement s = prepare(c, sql, args); ResultSet rs = s.executeQuery()) {
            List<T> rows = new ArrayList<>();
            while (rs.next()) {
                rows.add(row.map(rs));
            }
            return rows;
        }
    }

    /** The same, on a connection of its own from the pool. */
    public static <T> List<T> list(DataSource database, String sql, Row<T> row, Object... args) throws SQLException {
        try (Connection c = database.getConnection()) {
            return list(c, sql, row, args);
        }
    }

    /** The first row the query returns, mapped; empty when it returns none. */
    public static <T> Optional<T> first(Connection c, String sql, Row<T> row, Object... args) throws SQLException {
        try (PreparedStatement s = prepare(c, sql, args); ResultSet rs = s.executeQuery()) {
            return rs.next() ? Optional.of(row.map(rs)) : Optional.empty();
        }
    }

    /** The first column of the first row as a number, e.g. of {@code SELECT COUNT(*)}; 0 when there is no row. */
    public static long number(Connection c, String sql, Object... args) throws SQLException {
        return first(c, sql, rs -> rs.getLong(1), args).orElse(0L);
    }

    /** Runs an INSERT, UPDATE or DELETE; how many rows it changed. */
    public static int update(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement s = prepare(c, sql, args)) {
            return s.executeUpdate();
        }
    }

    /** A statement with its parameters bound; the caller closes it. */
    public static PreparedStatement prepare(Connection c, String sql, Object... args) throws SQLException {
        PreparedStatement s = c.prepareStatement(sql);
        try {
            bind(s, args);
        } catch (SQLException e) {
            s.close();
            throw e;
        }
        return s;
    }

    /** Binds the parameters from the first placeholder on. */
    public static void bind(PreparedStatement s, Object... args) throws SQLException {
        for (int i = 0; i < args.length; i++) {
            Object arg = args[i];
            if (arg instanceof Instant instant) {
                s.setTimestamp(i + 1, Timestamp.from(instant));
            } else {
                s.setObject(i + 1, arg);
            }
        }
    }

    /** A number column, or null when it is NULL (getLong alone says 0). */
    public static Long longOrNull(ResultSet rs, int column) throws SQLException {
        long value = rs.getLong(column);
        return rs.wasNull() ? null : value;
    }

    /** A timestamp column as an instant, or null. */
    public static Instant instant(ResultSet rs, int column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }
}
