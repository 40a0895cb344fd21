package dev.placementaudit.store.db;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import org.flywaydb.core.Flyway;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * The audit store's database: a HikariCP pool over PostgreSQL or H2, migrated by Flyway on open. The same
 * migrations run on both; {@link Dialect} covers the one statement that differs.
 */
public final class AuditDatabase implements AutoCloseable {
    private final HikariDataSource pool;
    private final Dialect dialect;

    private AuditDatabase(HikariDataSource pool, Dialect dialect) {
        this.pool = pool;
        this.dialect = dialect;
    }

    /**
     * @param schema schema to use (created if missing); null for the connection's default
     */
    public static AuditDatabase open(String jdbcUrl, String user, String password, String schema, int poolSize) {
        Dialect dialect = Dialect.of(jdbcUrl);
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(poolSize);
        config.setPoolName("audit-store");
        config.setAutoCommit(true);
        // Fail fast at start-up when the database is not there, and let a broken connection surface quickly.
        config.setConnectionTimeout(10_000);
        config.setInitializationFailTimeout(30_000);
        if (dialect == Dialect.POSTGRESQL) {
            // One multi-row INSERT per JDBC batch instead of a statement per row.
            config.addDataSourceProperty("reWriteBatchedInserts", "true");
        }
        if (schema != null) {
            createSchema(jdbcUrl, user, password, schema);
            config.setSchema(schema);
        }
        HikariDataSource pool = new HikariDataSource(config);
        try {
            var flyway = Flyway.configure().dataSource(pool).locations("classpath:db/migration");
            if (schema != null) {
                flyway = flyway.schemas(schema).defaultSchema(schema).createSchemas(true);
            }
            flyway.load().migrate();
        } catch (RuntimeException e) {
            pool.close();
            throw e;
        }
        return new AuditDatabase(pool, dialect);
    }

    /** H2 refuses a connection to a schema that does not exist yet (PostgreSQL merely searches it): make it first. */
    private static void createSchema(String jdbcUrl, String user, String password, String schema) {
        if (!schema.matches("[A-Za-z_][A-Za-z0-9_]{0,62}")) {
            throw new IllegalArgumentException("schema name '" + schema + "' must be a plain identifier");
        }
        try (Connection c = java.sql.DriverManager.getConnection(jdbcUrl, user, password); java.sql.Statement s = c.createStatement()) {
            s.execute("CREATE SCHEMA IF NOT EXISTS " + schema);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create schema " + schema + ": " + e.getMessage(), e);
        }
    }

    public DataSource dataSource() {
        return pool;
    }

    public Dialect dialect() {
        return dialect;
    }

    /** A connection in a transaction of its own (auto-commit off); the caller commits. */
    public Connection transaction() throws SQLException {
        Connection connection = pool.getConnection();
        connection.setAutoCommit(false);
        return connection;
    }

    @Override
    public void close() {
        pool.close();
    }
}
