package dev.placementaudit.store;

import dev.placementaudit.store.ingest.IngestLoop;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.PostgresServer;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A real PostgreSQL outage: the store's own database stops accepting connections and its sessions are killed,
 * while decisions keep arriving; then it comes back. Nothing may be lost or stored twice.
 */
@ExtendWith(KafkaBrokerExtension.class)
class DatabaseOutageTest {

    @Test
    void ingestionWaitsOutAnOutageAndCatchesUpWithNothingLost(KafkaBroker broker) throws Exception {
        PostgresServer server = PostgresServer.fromEnvironment();
        String name = "pa_outage_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
        admin(server, "CREATE DATABASE " + name);
        try (TestDatabase db = new OwnDatabase(server, name)) {
            StoreHarness h = new StoreHarness(broker, db);
            h.publish(IntStream.range(0, 5).mapToObj(i -> StoreHarness.load("d" + i, "r1", 1, i, false)).toList());
            Map<String, String> settings = h.settings();
            try (AuditStore store = h.start(settings)) {
                await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 5);

                admin(server, "ALTER DATABASE " + name + " ALLOW_CONNECTIONS false");
                admin(server, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "'");
                h.publish(IntStream.range(5, 12).mapToObj(i -> StoreHarness.load("d" + i, "r1", 1, i, false)).toList());
                await().atMost(Duration.ofSeconds(60)).until(() -> store.state() == IngestLoop.State.DATABASE_UNAVAILABLE);
                assertThat(store.health().up()).isFalse();

                admin(server, "ALTER DATABASE " + name + " ALLOW_CONNECTIONS true");

                await().atMost(Duration.ofSeconds(90)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 12);
                assertThat(h.count("SELECT COUNT(*) FROM load_tensors")).isEqualTo(12 * 3);
                await().atMost(Duration.ofSeconds(30)).until(() -> store.state() == IngestLoop.State.RUNNING);
            }
        } finally {
            admin(server, "ALTER DATABASE " + name + " ALLOW_CONNECTIONS true");
            admin(server, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "'");
            admin(server, "DROP DATABASE IF EXISTS " + name);
        }
    }

    private static void admin(PostgresServer server, String sql) throws SQLException {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setUrl(server.jdbcUrl());
        ds.setUser(server.user());
        ds.setPassword(server.password());
        try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    /** A whole database of the test's own, so that making it unavailable touches nothing else. */
    private record OwnDatabase(PostgresServer server, String name) implements TestDatabase {
        @Override
        public Kind kind() {
            return Kind.POSTGRESQL;
        }

        @Override
        public String jdbcUrl() {
            return server.jdbcUrl().substring(0, server.jdbcUrl().lastIndexOf('/') + 1) + name;
        }

        @Override
        public String user() {
            return server.user();
        }

        @Override
        public String password() {
            return server.password();
        }

        @Override
        public String schema() {
            return "public";
        }

        @Override
        public DataSource dataSource() {
            PGSimpleDataSource ds = new PGSimpleDataSource();
            ds.setUrl(jdbcUrl());
            ds.setUser(user());
            ds.setPassword(password());
            return ds;
        }

        @Override
        public void close() {
        }
    }
}
