package dev.placementaudit.store.db;

/**
 * Loads found by id through {@code load_ids} (V30): the id's time first, which takes PostgreSQL to the one month that
 * holds the load instead of probing every month's index (docs/adr/0025-load-ids-beside-the-months.md). A condition on
 * {@code load_rows}, or a view over it, for a statement's {@code WHERE}.
 */
public final class ById {
    private ById() {
    }

    /** The loads whose ids are {@link InList}'s {@code %s}; {@code alias} is the table's, or empty. */
    public static String in(String alias) {
        return of(alias) + "load_id IN (%s))";
    }

    /** The load whose id is the statement's parameter at this place. */
    public static String is(String alias) {
        return of(alias) + "load_id = ?)";
    }

    /** {@code FROM}-clause joins from {@code table.column} naming a load to that load's row, as {@code l}. */
    public static String join(String table, String column) {
        return "JOIN load_ids i ON i.load_id = " + table + "." + column + " JOIN load_rows l ON l.load_id = i.load_id AND l.occurred_at = i.occurred_at";
    }

    private static String of(String alias) {
        String p = alias.isEmpty() ? "" : alias + ".";
        return "(" + p + "load_id, " + p + "occurred_at) IN (SELECT load_id, occurred_at FROM load_ids WHERE ";
    }
}
