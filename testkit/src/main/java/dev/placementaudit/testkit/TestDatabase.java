package dev.placementaudit.testkit;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.SQLException;

/** A database of its own for one test: nothing another test wrote is visible, and it is dropped afterwards. */
public interface TestDatabase extends AutoCloseable {

    enum Kind {
        POSTGRESQL,
        H2
    }

    Kind kind();

    /** A URL that lands in this test's own schema or database. */
    String jdbcUrl();

    String user();

    String password();

    /** The schema this test owns (PostgreSQL) or the database's default one (H2). */
    String schema();

    DataSource dataSource();

    default Connection connect() throws SQLException {
        return dataSource().getConnection();
    }

    @Override
    void close();
}
