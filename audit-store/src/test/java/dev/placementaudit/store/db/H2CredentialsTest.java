package dev.placementaudit.store.db;

import dev.placementaudit.store.config.StoreConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.ConnectException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** An embedded H2 store is never open to the default user with an empty password, nor reachable from another machine. */
class H2CredentialsTest {
    @TempDir
    Path dir;

    /** Every row is in the .mv.db file: no other local account may read it, nor list the directory the store made for it. */
    @Test
    void theStoresFilesAndTheDirectoryItMakesAreItsOwnersAlone() throws Exception {
        Path home = dir.resolve("not-yet").resolve("store");
        String url = StoreConfig.h2Url(home.resolve("audit").toString());

        try (AuditDatabase store = AuditDatabase.open(url, "sa", "", null, 2)) {
            assertThat(Files.getPosixFilePermissions(home)).isEqualTo(java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
            try (var files = Files.list(home)) {
                List<Path> db = files.filter(f -> f.getFileName().toString().endsWith(".db")).toList();
                assertThat(db).extracting(f -> f.getFileName().toString()).contains("audit.mv.db");
                assertThat(db).allSatisfy(f -> assertThat(Files.getPosixFilePermissions(f)).as(f.toString())
                        .isEqualTo(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE)));
            }
        }
    }

    @Test
    void aNewStoreGetsAGeneratedPasswordReadableByItsOwnerOnlyAndTheCliFindsIt() throws Exception {
        String url = StoreConfig.h2Url(dir.resolve("audit").toString());

        try (AuditDatabase store = AuditDatabase.open(url, "sa", "", null, 2)) {
            Path secret = dir.resolve("audit.password");
            assertThat(secret).exists();
            assertThat(Files.getPosixFilePermissions(secret)).isEqualTo(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE));
            String password = Files.readString(secret).strip();
            assertThat(password).hasSizeGreaterThanOrEqualTo(32);
            assertThatThrownBy(() -> DriverManager.getConnection(url, "sa", "").close()).isInstanceOf(SQLException.class)
                    .hasMessageContaining("Wrong user name or password");

            try (AuditDatabase cli = AuditDatabase.openExisting(url, "sa", "", null, 1, Duration.ofSeconds(5));
                 Connection c = cli.dataSource().getConnection()) {
                assertThat(c.createStatement().executeQuery("SELECT COUNT(*) FROM loads").next()).isTrue();
            }
        }
    }

    @Test
    void aStoreMadeWithAnEmptyPasswordIsGivenOneTheFirstTimeTheStoreOpensIt() throws Exception {
        String url = StoreConfig.h2Url(dir.resolve("old").toString());
        try (Connection legacy = DriverManager.getConnection(url, "sa", "")) {
            legacy.createStatement().execute("CREATE TABLE public.legacy_marker (i INT)");
            legacy.createStatement().execute("DROP TABLE public.legacy_marker");
        }
        assertThat(dir.resolve("old.mv.db")).exists();

        try (AuditDatabase store = AuditDatabase.open(url, "sa", "", null, 2)) {
            String password = Files.readString(dir.resolve("old.password")).strip();
            try (Connection c = DriverManager.getConnection(url, "sa", password)) {
                assertThat(c.createStatement().executeQuery("SELECT COUNT(*) FROM loads").next()).isTrue();
            }
            assertThatThrownBy(() -> DriverManager.getConnection(url, "sa", "").close()).isInstanceOf(SQLException.class);
        }
    }

    @Test
    void aConfiguredPasswordIsUsedAsItIsAndNothingIsWrittenBesideTheStore() throws Exception {
        String url = StoreConfig.h2Url(dir.resolve("configured").toString());

        try (AuditDatabase store = AuditDatabase.open(url, "sa", "chosen-by-the-operator", null, 2)) {
            assertThat(dir.resolve("configured.password")).doesNotExist();
            DriverManager.getConnection(url, "sa", "chosen-by-the-operator").close();
        }
        assertThat(H2Credentials.passwordFile("jdbc:postgresql://db/audit")).isEmpty();
    }

    @Test
    void autoServerListensOnLoopbackOnly() throws Exception {
        String url = StoreConfig.h2Url(dir.resolve("served").toString());
        try (AuditDatabase store = AuditDatabase.open(url, "sa", "", null, 2); Connection held = store.dataSource().getConnection()) {
            assertThat(System.getProperty("h2.bindAddress")).isEqualTo("127.0.0.1");
            Properties lock = new Properties();
            try (var in = Files.newInputStream(dir.resolve("served.lock.db"))) {
                lock.load(in);
            }
            String server = lock.getProperty("server");
            assertThat(server).as("AUTO_SERVER's address in the lock file").isNotNull();
            int port = Integer.parseInt(server.substring(server.lastIndexOf(':') + 1));
            try (Socket loopback = new Socket()) {
                loopback.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
            }
            List<InetAddress> others = Collections.list(NetworkInterface.getNetworkInterfaces()).stream()
                    .flatMap(NetworkInterface::inetAddresses).filter(a -> a instanceof Inet4Address && !a.isLoopbackAddress()).toList();
            for (InetAddress address : others) {
                assertThatThrownBy(() -> {
                    try (Socket socket = new Socket()) {
                        socket.connect(new InetSocketAddress(address, port), 2_000);
                    }
                }).as("H2's port through %s", address).isInstanceOf(ConnectException.class);
            }
        }
    }
}
