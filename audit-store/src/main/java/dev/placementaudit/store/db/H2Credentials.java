package dev.placementaudit.store.db;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Base64;
import java.util.Locale;
import java.util.Optional;

/**
 * An H2 file store's password, when none is configured: generated once, kept beside the database in
 * {@code <name>.password} (mode 0600, so only the account that owns the store reads it), and used by every
 * process that opens the file: {@code store run}, the CLI, a test. Without it, H2's default is user {@code sa} with
 * an empty password, and AUTO_SERVER would let any local process in through its TCP port. A store created before
 * this existed (empty password) is given one the first time {@code store run} opens it.
 *
 * <p>H2's TCP server (AUTO_SERVER) also listens on loopback only: {@link #bindLoopback()} sets {@code h2.bindAddress}
 * unless already set, before H2 reads it.
 */
public final class H2Credentials {
    private static final Logger LOG = LoggerFactory.getLogger(H2Credentials.class);
    private static final SecureRandom RANDOM = new SecureRandom();

    private H2Credentials() {
    }

    /** H2's AUTO_SERVER binds every interface unless told otherwise; our processes tell it loopback. */
    public static void bindLoopback() {
        if (System.getProperty("h2.bindAddress") == null) {
            System.setProperty("h2.bindAddress", "127.0.0.1");
        }
    }

    /** The file beside an H2 file URL's database that holds its password; empty for other URLs. */
    public static Optional<Path> passwordFile(String jdbcUrl) {
        return H2Files.base(jdbcUrl).map(base -> Path.of(base + ".password"));
    }

    /**
     * The password to connect with: the configured one when given; otherwise the one beside the database; otherwise,
     * when {@code mayCreate} (a store that writes), a new one, set on the database if it already exists.
     */
    public static String resolve(String jdbcUrl, String user, String configured, boolean mayCreate) {
        Optional<Path> file = passwordFile(jdbcUrl);
        if (configured != null && !configured.isEmpty() || file.isEmpty()) {
            return configured;
        }
        Path secret = file.get();
        if (Files.isRegularFile(secret)) {
            return read(secret);
        }
        if (!mayCreate) {
            return configured;
        }
        Path database = Path.of(secret.toString().substring(0, secret.toString().length() - ".password".length()) + ".mv.db");
        String generated = generate();
        try {
            Files.createDirectories(secret.toAbsolutePath().getParent());
            Path pending = write(secret.resolveSibling(secret.getFileName() + ".new"), generated);
            if (Files.exists(database)) {
                // A store made before passwords were generated: it opens with an empty one, which is replaced.
                try (Connection c = DriverManager.getConnection(jdbcUrl, user, configured == null ? "" : configured);
                     Statement s = c.createStatement()) {
                    s.execute("ALTER USER " + quoteIdentifier(user) + " SET PASSWORD '" + generated + "'");
                } catch (SQLException e) {
                    Files.deleteIfExists(pending);
                    throw new IllegalStateException("cannot set a password on the H2 store " + database + ": " + e.getMessage(), e);
                }
                LOG.warn("the H2 store {} had an empty password; it now has a generated one, kept in {} (readable by this account only)",
                        database, secret);
            }
            Files.move(pending, secret, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot keep the H2 store's password in " + secret, e);
        }
        return generated;
    }

    private static String generate() {
        byte[] bytes = new byte[24];
        RANDOM.nextBytes(bytes);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    private static Path write(Path file, String password) throws IOException {
        Files.deleteIfExists(file);
        if (FileSystems.getDefault().supportedFileAttributeViews().contains("posix")) {
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } else {
            Files.createFile(file);
        }
        Files.writeString(file, password + "\n", StandardCharsets.UTF_8);
        return file;
    }

    private static String read(Path secret) {
        try {
            return Files.readString(secret, StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the H2 store's password from " + secret, e);
        }
    }

    private static String quoteIdentifier(String user) {
        return "\"" + (user == null ? "SA" : user.toUpperCase(Locale.ROOT)).replace("\"", "\"\"") + "\"";
    }
}
