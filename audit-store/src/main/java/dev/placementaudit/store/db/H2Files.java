package dev.placementaudit.store.db;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * An H2 file store's files are readable by the account that runs the store alone: every row is in {@code .mv.db}, and
 * H2 would create it (and its {@code .lock.db}, {@code .trace.db}) with the process's umask, typically 0644, readable by
 * any local account without the database's password. A directory the store creates for them is 0700; the files are
 * made 0600 once H2 has created them. On a file system without POSIX permissions nothing is changed.
 */
final class H2Files {
    private static final Logger LOG = LoggerFactory.getLogger(H2Files.class);
    private static final Set<PosixFilePermission> OWNER_DIRECTORY = PosixFilePermissions.fromString("rwx------");
    private static final Set<PosixFilePermission> OWNER_FILE = PosixFilePermissions.fromString("rw-------");

    private H2Files() {
    }

    /** The database's path without H2's suffixes ({@code ~} as the user's home, as H2 reads it), for a file URL; empty for any other. */
    static Optional<Path> base(String jdbcUrl) {
        if (!jdbcUrl.startsWith("jdbc:h2:file:")) {
            return Optional.empty();
        }
        String path = jdbcUrl.substring("jdbc:h2:file:".length()).split(";", 2)[0];
        if (path.startsWith("~")) {
            path = System.getProperty("user.home") + path.substring(1);
        }
        return Optional.of(Path.of(path));
    }

    /** Before H2 opens the URL: its directory, when missing, is created readable by this account only. */
    static void prepareDirectory(String jdbcUrl) {
        base(jdbcUrl).map(base -> base.toAbsolutePath().getParent()).filter(dir -> !Files.exists(dir)).ifPresent(dir -> {
            try {
                Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(OWNER_DIRECTORY));
            } catch (UnsupportedOperationException e) {
                createPlain(dir);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot create the H2 store's directory " + dir, e);
            }
        });
    }

    /** After H2 opened the URL: the files it made for the database are made readable by this account only. */
    static void restrictFiles(String jdbcUrl) {
        base(jdbcUrl).ifPresent(base -> {
            for (String suffix : List.of(".mv.db", ".lock.db", ".trace.db")) {
                Path file = Path.of(base + suffix);
                try {
                    if (Files.isRegularFile(file) && !Files.getPosixFilePermissions(file).equals(OWNER_FILE)) {
                        Files.setPosixFilePermissions(file, OWNER_FILE);
                    }
                } catch (UnsupportedOperationException | IOException e) {
                    LOG.debug("cannot restrict {} to its owner: {}", file, e.toString());
                }
            }
        });
    }

    private static void createPlain(Path dir) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the H2 store's directory " + dir, e);
        }
    }
}
