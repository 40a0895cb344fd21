package dev.placementaudit.store.ingest;

import java.sql.SQLException;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * Tells a row the database refuses from a database that is not there. A refused row (SQLSTATE class 22, data
 * exception, or 23, integrity constraint violation) will be refused again however long we wait, so it must be set
 * aside; anything else (08 connection, 53 resources, 57 operator intervention, a timeout) is waited out. A 23505
 * unique violation is the one class-23 state that is not content: concurrent idempotent inserts raise it.
 */
final class SqlFailures {
    private SqlFailures() {
    }

    /** The SQLSTATE that makes {@code e} a content error, looking through batch and cause chains; empty for an outage. */
    static Optional<String> contentState(SQLException e) {
        return first(e, sql -> {
            String state = sql.getSQLState();
            return state != null && (state.startsWith("22") || (state.startsWith("23") && !state.equals("23505")));
        }).map(SQLException::getSQLState);
    }

    /**
     * Whether {@code e} is a unique violation on {@code load_ids} (V30): another store instance stored one of the batch's
     * load ids since the batch was checked ({@link LoadIds}), so it must be checked again, not retried as it is (it would
     * fail the same way forever).
     */
    static boolean loadIdTaken(SQLException e) {
        return first(e, sql -> "23505".equals(sql.getSQLState()) && sql.getMessage() != null
                && sql.getMessage().toLowerCase(Locale.ROOT).contains("load_ids")).isPresent();
    }

    /** The first exception in {@code e}'s cause and batch chains that {@code matches}. */
    private static Optional<SQLException> first(SQLException e, Predicate<SQLException> matches) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql) {
                for (SQLException next = sql; next != null; next = next.getNextException()) {
                    if (matches.test(next)) {
                        return Optional.of(next);
                    }
                }
            }
        }
        return Optional.empty();
    }

    /** The first useful line of the database's message, without what a column or a header could not hold either. */
    static String message(SQLException e) {
        SQLException first = e.getNextException() != null ? e.getNextException() : e;
        String text = first.getMessage() == null ? first.getClass().getSimpleName() : first.getMessage();
        int newline = text.indexOf('\n');
        return Text.printable(newline < 0 ? text : text.substring(0, newline), 1_000);
    }
}
