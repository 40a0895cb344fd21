package dev.placementaudit.store.db;

import java.sql.SQLException;

/** Carries an {@link SQLException} out of a lambda; the code around it throws {@link #getCause()} again. */
public final class UncheckedSqlException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public UncheckedSqlException(SQLException cause) {
        super(cause);
    }

    @Override
    public synchronized SQLException getCause() {
        return (SQLException) super.getCause();
    }
}
