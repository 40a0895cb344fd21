package dev.placementaudit.store.db;

import java.util.ArrayList;
import java.util.List;

/**
 * A query's optional filters: each condition is kept only when the user gave its value, and its parameter with it,
 * so the SQL and its arguments never disagree. Column names are constants of the caller, never input.
 */
public final class Filter {
    private final List<String> conditions = new ArrayList<>();
    private final List<Object> args = new ArrayList<>();

    /** {@code column = ?}, when {@code value} is given (not null). */
    public Filter equal(String column, Object value) {
        if (value != null) {
            conditions.add(column + " = ?");
            args.add(value);
        }
        return this;
    }

    /** A condition without parameters, e.g. {@code state = 'OPEN'}, when {@code applies}. */
    public Filter when(boolean applies, String condition) {
        if (applies) {
            conditions.add(condition);
        }
        return this;
    }

    /** {@code " WHERE a AND b"}, or "" when no filter was given. */
    public String where() {
        return conditions.isEmpty() ? "" : " WHERE " + String.join(" AND ", conditions);
    }

    /** The parameters, in the order of their conditions. */
    public Object[] args() {
        return args.toArray();
    }
}
