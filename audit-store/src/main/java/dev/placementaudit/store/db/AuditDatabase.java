package dev.placementaudit.store.db;

import dev.placementaudit.service.cli.CommandFailure;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import org.flywaydb.core.Flyway;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Locale;
import java.util.Properties;
import javax.sql.DataSource;

/**
 * The audit store's database: a HikariCP pool over PostgreSQL or H2, migrated by Flyway on open (or, for a query that
 * runs once, plain connections). The same
 * migrations run on both; {@link Dialect} covers the one statement that differs.
 */
public final class AuditDatabase implements AutoCloseable {
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(10);
    /** H2's codes for "database not found" (with IFEXISTS) and "schema not found". */
    private static final int H2_DATABASE_NOT_FOUND = 90146;
    private static final int H2_SCHEMA_NOT_FOUND = 90079;
    private static final String IF_EXISTS = "IFEXISTS=TRUE";

    static {
        H2Credentials.bindLoopback();
    }

    private final DataSource pool;
    private final AutoCloseable closer;
    private final Dialect dialect;

    private AuditDatabase(HikariDataSource pool, Dialect dialect) {
        this(pool, pool, dialect);
    }

    private AuditDatabase(DataSource pool, AutoCloseable closer, Dialect dialect) {
        this.pool = pool;
        this.closer = closer;
        this.dialect = dialect;
    }

    /**
     * Opens the store a service writes to, migrating it (and creating the schema) as needed.
     *
     * @param schema schema to use (created if missing); null for the connection's default
     */
    public static AuditDatabase open(String jdbcUrl, String user, String password, String schema, int poolSize) {
        return open(jdbcUrl, user, password, schema, poolSize, DEFAULT_CONNECT_TIMEOUT);
    }

    public static AuditDatabase open(String jdbcUrl, String user, String configuredPassword, String schema, int poolSize, Duration connectTimeout) {
        Dialect dialect = Dialect.of(jdbcUrl);
        H2Files.prepareDirectory(jdbcUrl);
        String password = H2Credentials.resolve(jdbcUrl, user, configuredPassword, true);
        probe(jdbcUrl, user, password, null, connectTimeout, false);
        if (schema != null) {
            createSchema(jdbcUrl, user, password, schema);
        }
        HikariDataSource pool = pool(jdbcUrl, user, password, schema, poolSize, connectTimeout, dialect);
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
        H2Files.restrictFiles(jdbcUrl);
        return new AuditDatabase(pool, dialect);
    }

    /**
     * Opens a store that must already exist, for reading: never creates a database, a schema or a table (an H2 URL gets
     * {@code IFEXISTS=TRUE}), and fails with a {@link CommandFailure} naming the URL when there is no projection there.
     *
     * @param poolSize connections to pool; 0 for no pool (a query that runs once: {@link DirectConnections})
     */
    public static AuditDatabase openExisting(String jdbcUrl, String user, String configuredPassword, String schema, int poolSize,
                                             Duration connectTimeout) {
        Dialect dialect = Dialect.of(jdbcUrl);
        String password = H2Credentials.resolve(jdbcUrl, user, configuredPassword, false);
        String url = dialect == Dialect.H2 && !jdbcUrl.toUpperCase(Locale.ROOT).contains("IFEXISTS=") ? jdbcUrl + ";" + IF_EXISTS : jdbcUrl;
        Connection probed = probe(url, user, password, schema, connectTimeout, true, poolSize == 0);
        AuditDatabase database;
        if (poolSize == 0) {
            // A query: one or two connections, then the process ends. A pool would open its own besides the probe's
            // (and start its threads); the probe's connection serves the first request instead.
            DirectConnections direct = new DirectConnections(url, properties(url, user, password, connectTimeout), schema, probed);
            database = new AuditDatabase(direct, direct, dialect);
        } else {
            database = new AuditDatabase(pool(url, user, password, schema, poolSize, connectTimeout, dialect), dialect);
        }
        H2Files.restrictFiles(jdbcUrl);
        return database;
    }

    private static HikariDataSource pool(String jdbcUrl, String user, String password, String schema, int poolSize, Duration connectTimeout,
                                         Dialect dialect) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(poolSize);
        config.setPoolName("audit-store");
        config.setAutoCommit(true);
        // The probe has already shown the database answers; these bound how long a broken one can hold a caller.
        long millis = Math.max(250, connectTimeout.toMillis());
        config.setConnectionTimeout(millis);
        config.setInitializationFailTimeout(millis);
        if (dialect == Dialect.POSTGRESQL) {
            // One multi-row INSERT per JDBC batch instead of a statement per row.
            config.addDataSourceProperty("reWriteBatchedInserts", "true");
            config.addDataSourceProperty("connectTimeout", Long.toString(Math.max(1, connectTimeout.toSeconds())));
        }
        if (schema != null) {
            config.setSchema(schema);
        }
        return new HikariDataSource(config);
    }

    /**
     * One connection, once, within the bound: a refused connection fails at once and a silent host after
     * {@code connectTimeout}, instead of a pool retrying for its own default of 30 s. With {@code requireProjection},
     * also checks that the projection is there (in {@code schema}, when given).
     */
    static void probe(String jdbcUrl, String user, String password, String schema, Duration connectTimeout, boolean requireProjection) {
        probe(jdbcUrl, user, password, schema, connectTimeout, requireProjection, false);
    }

    /** How to connect: the credentials, and on PostgreSQL the bounds on connecting. */
    private static Properties properties(String jdbcUrl, String user, String password, Duration connectTimeout) {
        Properties properties = new Properties();
        if (user != null) {
            properties.setProperty("user", user);
        }
        if (password != null) {
            properties.setProperty("password", password);
        }
        long seconds = Math.max(1, connectTimeout.toSeconds());
        if (Dialect.of(jdbcUrl) == Dialect.POSTGRESQL) {
            // H2 refuses settings it does not know; it has no network to wait on unless AUTO_SERVER finds a peer.
            properties.setProperty("connectTimeout", Long.toString(seconds));
            properties.setProperty("loginTimeout", Long.toString(seconds));
        }
        return properties;
    }

    /** The probe; with {@code keep}, its connection is returned open (else null). */
    private static Connection probe(String jdbcUrl, String user, String password, String schema, Duration connectTimeout,
                                    boolean requireProjection, boolean keep) {
        Properties properties = properties(jdbcUrl, user, password, connectTimeout);
        String shown = describe(jdbcUrl);
        Connection c;
        try {
            c = Dialect.of(jdbcUrl).connect(jdbcUrl, properties);
        } catch (SQLException e) {
            throw unopened(shown, schema, connectTimeout, e);
        }
        try {
            if (schema != null) {
                c.setSchema(schema);
            }
            if (requireProjection) {
                try (Statement s = c.createStatement()) {
                    s.executeQuery("SELECT 1 FROM loads WHERE 1 = 0").close();
                } catch (SQLException e) {
                    throw new CommandFailure("no audit projection in the store at " + shown + (schema == null ? "" : " (schema " + schema + ")")
                            + ": table 'loads' is missing. Queries never create one; point --store at the store `placement-audit store run` writes", e);
                }
            }
            if (keep) {
                return c;
            }
            c.close();
            return null;
        } catch (SQLException | RuntimeException e) {
            try {
                c.close();
            } catch (SQLException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e instanceof SQLException sql ? unopened(shown, schema, connectTimeout, sql) : (RuntimeException) e;
        }
    }

    private static CommandFailure unopened(String shown, String schema, Duration connectTimeout, SQLException e) {
        if (e.getErrorCode() == H2_DATABASE_NOT_FOUND || "3D000".equals(e.getSQLState())) {
            return new CommandFailure("no audit store at " + shown + ": the database does not exist. Queries never create one; "
                    + "pass --store (a JDBC URL, an H2 file or a name from conf/) or set PA_STORE_JDBC_URL", e);
        }
        if (e.getErrorCode() == H2_SCHEMA_NOT_FOUND || "3F000".equals(e.getSQLState())) {
            return new CommandFailure("no audit projection in the store at " + shown + ": schema " + schema + " does not exist", e);
        }
        return new CommandFailure("cannot open the audit store at " + shown + " (waited at most " + Math.max(1, connectTimeout.toSeconds())
                + " s): " + firstLine(e.getMessage()), e);
    }

    private static String firstLine(String message) {
        if (message == null) {
            return "no reason given";
        }
        int newline = message.indexOf('\n');
        return newline < 0 ? message : message.substring(0, newline);
    }

    /** The store as a user knows it: an H2 URL as the file it opens, any other URL with its password masked. */
    static String describe(String jdbcUrl) {
        String url = jdbcUrl.replace(";" + IF_EXISTS, "");
        if (url.startsWith("jdbc:h2:file:")) {
            String path = url.substring("jdbc:h2:file:".length()).split(";", 2)[0];
            return "H2 file " + Path.of(path + ".mv.db").toAbsolutePath().normalize() + " (" + redact(url.split(";", 2)[0]) + ")";
        }
        return redact(url);
    }

    /** A JDBC URL fit for a log line or an error message: any password in it masked. */
    public static String redact(String jdbcUrl) {
        return jdbcUrl.replaceAll("(?i)(password=)[^&;]*", "$1****");
    }

    /** H2 refuses a connection to a schema that does not exist yet (PostgreSQL merely searches it): make it first. */
    private static void createSchema(String jdbcUrl, String user, String password, String schema) {
        if (!schema.matches("[A-Za-z_][A-Za-z0-9_]{0,62}")) {
            throw new IllegalArgumentException("schema name '" + schema + "' must be a plain identifier");
        }
        try (Connection c = DriverManager.getConnection(jdbcUrl, user, password); Statement s = c.createStatement()) {
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
        if (dialect == Dialect.POSTGRESQL) {
            // The driver prepares a statement on the server after 5 runs, and PostgreSQL may then settle on a generic
            // plan made while a table was still small: a sequential scan of loads for a batch's IN-list of ids,
            // measured at 12 ms a call where the index takes 0.2 ms. A write transaction's statements are planned
            // for their actual values (SET LOCAL: the setting ends with the transaction); queries keep the default.
            try (Statement s = connection.createStatement()) {
                s.execute("SET LOCAL plan_cache_mode = force_custom_plan");
            } catch (SQLException e) {
                connection.close();
                throw e;
            }
        }
        return connection;
    }

    @Override
    public void close() {
        try {
            closer.close();
        } catch (Exception e) {
            throw new IllegalStateException("closing the audit store's connections failed: " + e.getMessage(), e);
        }
    }
}
