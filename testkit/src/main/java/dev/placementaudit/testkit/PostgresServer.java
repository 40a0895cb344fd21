package dev.placementaudit.testkit;

import org.junit.jupiter.api.Assumptions;
import org.postgresql.ds.PGSimpleDataSource;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The PostgreSQL server tests use: {@code PGHOST}/{@code PGPORT}/{@code PGUSER}/{@code PGPASSWORD}/{@code PGDATABASE},
 * defaulting to 127.0.0.1:5432, user postgres, database test (trust auth, as on our machines).
 *
 * <p>When it cannot be reached the test is aborted with the reason - except under {@code CI=true} (or
 * {@code -Dpa.require.postgres=true}), where a missing database must fail the run, never skip it.
 */
public record PostgresServer(String host, int port, String user, String password, String database, boolean required) {
    public static PostgresServer fromEnvironment() {
        boolean required = "true".equalsIgnoreCase(System.getenv("CI")) || Boolean.getBoolean("pa.require.postgres");
        return new PostgresServer(env("PGHOST", "127.0.0.1"), Integer.parseInt(env("PGPORT", "5432")),
                env("PGUSER", "postgres"), env("PGPASSWORD", ""), env("PGDATABASE", "test"), required);
    }

    /** An explicit server, for tests of the fixture itself. */
    public static PostgresServer at(String host, int port, String user, String password, String database, boolean required) {
        return new PostgresServer(host, port, user, password, database, required);
    }

    public String jdbcUrl() {
        return "jdbc:postgresql://" + host + ":" + port + "/" + database;
    }

    /** A new schema only this test sees; dropped with everything in it on close. */
    public TestDatabase createIsolatedSchema() {
        String schema = ("pa_" + module() + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10))
                .toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]", "_");
        PGSimpleDataSource admin = dataSource(null);
        try (Connection connection = admin.getConnection(); Statement statement = connection.createStatement()) {
            statement.execute("CREATE SCHEMA " + schema);
        } catch (SQLException e) {
            unreachable(e);
        }
        return new Schema(schema);
    }

    private PGSimpleDataSource dataSource(String schema) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setServerNames(new String[]{host});
        ds.setPortNumbers(new int[]{port});
        ds.setDatabaseName(database);
        ds.setUser(user);
        ds.setPassword(password);
        ds.setConnectTimeout(5);
        ds.setLoginTimeout(5);
        if (schema != null) {
            ds.setCurrentSchema(schema);
        }
        return ds;
    }

    private void unreachable(SQLException e) {
        String where = "PostgreSQL at " + host + ":" + port + "/" + database + " as " + user;
        if (required) {
            throw new IllegalStateException(where + " is required (CI=true) but not usable: " + e.getMessage()
                    + ". Start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start", e);
        }
        Assumptions.abort(where + " not reachable (" + e.getMessage() + "); set CI=true to make this a failure");
    }

    private static String module() {
        String module = System.getenv("PA_TEST_MODULE");
        return module == null ? "test" : module.replace("-", "");
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value;
    }

    private final class Schema implements TestDatabase {
        private final String name;
        private final PGSimpleDataSource dataSource;

        private Schema(String name) {
            this.name = name;
            this.dataSource = PostgresServer.this.dataSource(name);
        }

        @Override
        public Kind kind() {
            return Kind.POSTGRESQL;
        }

        @Override
        public String jdbcUrl() {
            return PostgresServer.this.jdbcUrl() + "?currentSchema=" + name;
        }

        @Override
        public String user() {
            return user;
        }

        @Override
        public String password() {
            return password;
        }

        @Override
        public String schema() {
            return name;
        }

        @Override
        public DataSource dataSource() {
            return dataSource;
        }

        @Override
        public void close() {
            try (Connection connection = PostgresServer.this.dataSource(null).getConnection();
                 Statement statement = connection.createStatement()) {
                statement.execute("DROP SCHEMA IF EXISTS " + name + " CASCADE");
            } catch (SQLException e) {
                throw new IllegalStateException("could not drop test schema " + name, e);
            }
        }

        @Override
        public String toString() {
            return "postgresql " + name;
        }
    }
}
