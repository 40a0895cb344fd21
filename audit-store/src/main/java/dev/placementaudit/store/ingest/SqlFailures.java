package dev.placementaudit.store.ingest;

import java.sql.SQLException;
import java.util.Optional;

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
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql) {
                for (SQLException next = sql; next != null; next = next.getNextException()) {
                    String state = next.getSQLState();
                    if (state != null && (state.startsWith("22") || (state.startsWith("23") && !state.equals("23505")))) {
                        return Optional.of(state);
                    }
                }
            }
        }
        return Optional.empty();
    }

    /**
     * Whether {@code e} is a unique violation on {@code load_ids} (V30): another store instance stored one of the batch's
     * load ids since the batch was checked ({@link LoadIds}), so it must be checked again, not retried as it is (it would
     * fail the same way forever).
     */
    static boolean loadIdTaken(SQLException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql) {
                for (SQLException next = sql; next != null; next = next.getNextException()) {
                    if ("23505".equals(next.getSQLState()) && next.getMessage() != null
                            && next.getMessage().toLowerCase(java.util.Locale.ROOT).contains("load_ids")) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /** The first useful line of the database's message, without what a column or a header could not hold either. */
    static String message(SQLException e) {
        SQLException first = e.getNextException() != null ? e.getNextException() : e;
        String text = first.getMessage() == null ? first.getClass().getSimpleName() : first.getMessage();
        int newline = text.indexOf('\n');
        return Text.printable(newline < 0 ? text : text.substring(0, newline), 1_000);
    }
}
