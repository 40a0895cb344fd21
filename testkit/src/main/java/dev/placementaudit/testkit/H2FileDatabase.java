package dev.placementaudit.testkit;

import org.h2.jdbcx.JdbcDataSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * H2 in file mode, the embedded store's default, in PostgreSQL compatibility mode; one file per test in a
 * temporary directory that is deleted on close.
 */
public final class H2FileDatabase implements TestDatabase {
    /** What the audit store uses for H2 too: lower-case identifiers, PostgreSQL null ordering, and AUTO_SERVER so a
     *  second process (the CLI, a test) can open the file while the store has it open. */
    public static final String MODE = ";MODE=PostgreSQL;DATABASE_TO_LOWER=TRUE;DEFAULT_NULL_ORDERING=HIGH;AUTO_SERVER=TRUE";

    private final Path dir;
    private final String url;
    private final JdbcDataSource dataSource;

    static {
        // As the store's processes do: H2's AUTO_SERVER port on loopback only.
        if (System.getProperty("h2.bindAddress") == null) {
            System.setProperty("h2.bindAddress", "127.0.0.1");
        }
    }

    private final String password;

    private H2FileDatabase(Path dir) {
        this.dir = dir;
        this.url = "jdbc:h2:file:" + dir.resolve("audit").toAbsolutePath() + MODE;
        // As the store does for an H2 file without a configured password: one generated, kept beside it (audit.password).
        this.password = UUID.randomUUID().toString();
        try {
            Files.writeString(dir.resolve("audit.password"), password + "\n");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the H2 test database's password", e);
        }
        this.dataSource = new JdbcDataSource();
        dataSource.setURL(url);
        dataSource.setUser("sa");
        dataSource.setPassword(password);
    }

    public static H2FileDatabase create() {
        try {
            return new H2FileDatabase(Files.createTempDirectory("pa-h2-"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a temporary directory for H2", e);
        }
    }

    @Override
    public Kind kind() {
        return Kind.H2;
    }

    @Override
    public String jdbcUrl() {
        return url;
    }

    @Override
    public String user() {
        return "sa";
    }

    @Override
    public String password() {
        return password;
    }

    @Override
    public String schema() {
        return "public";
    }

    @Override
    public DataSource dataSource() {
        return dataSource;
    }

    @Override
    public void close() {
        try (var connection = dataSource.getConnection(); var statement = connection.createStatement()) {
            statement.execute("SHUTDOWN");
        } catch (SQLException e) {
            throw new IllegalStateException("could not shut H2 down in " + dir, e);
        } finally {
            EmbeddedKafkaBroker.deleteRecursively(dir);
        }
    }

    @Override
    public String toString() {
        return "h2 " + dir;
    }
}
