package dev.placementaudit.store.ingest;

import dev.placementaudit.testkit.TestDatabase;
import org.flywaydb.core.Flyway;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/** A test database brought to the store's schema, and what the tests of this package ask of it. */
final class MigratedDatabase {
    private MigratedDatabase() {
    }

    static void migrate(TestDatabase db) {
        Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").load().migrate();
    }

    /** A connection in a transaction of its own, to commit or roll back. */
    static Connection transaction(TestDatabase db) throws SQLException {
        Connection c = db.dataSource().getConnection();
        c.setAutoCommit(false);
        return c;
    }

    /** The first column of each row the query returns, as text. */
    static List<String> rows(TestDatabase db, String sql) throws SQLException {
        List<String> rows = new ArrayList<>();
        try (Connection c = db.dataSource().getConnection(); PreparedStatement s = c.prepareStatement(sql); ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
                rows.add(rs.getString(1));
            }
        }
        return rows;
    }
}
