package dev.placementaudit.store.plans;

import dev.placementaudit.schemas.PlanDigest;

import java.sql.ResultSet;
import java.sql.SQLException;

/** A plan tensor's values read from a row, typed as {@link PlanDigest#values} types a decision's (int index, long sizes). */
public final class PlanValues {
    private PlanValues() {
    }

    /** The {@link PlanDigest#COLUMNS} of the current row, which the query selected in that order from column {@code from}. */
    public static Object[] read(ResultSet rs, int from) throws SQLException {
        Object[] values = new Object[PlanDigest.COLUMNS.size()];
        for (int i = 0; i < values.length; i++) {
            Object value = rs.getObject(from + i);
            values[i] = value instanceof Number n && !(value instanceof Integer) && !(value instanceof Long) ? n.longValue() : value;
        }
        values[0] = ((Number) values[0]).intValue();
        return values;
    }
}
