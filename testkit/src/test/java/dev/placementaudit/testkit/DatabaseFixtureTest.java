package dev.placementaudit.testkit;

import org.junit.jupiter.api.Test;
import org.opentest4j.TestAbortedException;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DatabaseFixtureTest {
    /** The portable idempotent insert the audit store relies on (FEASIBILITY.md 5). */
    private static final String MERGE = "MERGE INTO decision AS t USING (VALUES (CAST(? AS VARCHAR(64)), CAST(? AS BIGINT))) "
            + "AS s(id, bytes) ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, bytes) VALUES (s.id, s.bytes)";

    @DatabaseTest
    void portableMergeInsertsOnceAndIgnoresTheReplay(TestDatabase db) throws SQLException {
        try (Connection connection = db.connect()) {
            execute(connection, "CREATE TABLE decision (id VARCHAR(64) PRIMARY KEY, bytes BIGINT NOT NULL)");

            assertThat(merge(connection, "d-1", 589_824)).isEqualTo(1);
            assertThat(merge(connection, "d-1", 589_824)).isZero();
            assertThat(count(connection, "decision")).isEqualTo(1);
        }
    }

    @DatabaseTest
    void aPlainDuplicateInsertFailsWithTheStandardSqlState(TestDatabase db) throws SQLException {
        try (Connection connection = db.connect()) {
            execute(connection, "CREATE TABLE decision (id VARCHAR(64) PRIMARY KEY, bytes BIGINT NOT NULL)");
            execute(connection, "INSERT INTO decision VALUES ('d-1', 1)");

            assertThatThrownBy(() -> execute(connection, "INSERT INTO decision VALUES ('d-1', 1)"))
                    .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("23505"));
        }
    }

    @DatabaseTest
    void eachTestSeesOnlyItsOwnTables(TestDatabase db) throws SQLException {
        try (TestDatabase other = DatabaseTargets.open(db.kind());
             Connection mine = db.connect(); Connection theirs = other.connect()) {
            execute(mine, "CREATE TABLE only_mine (x INT)");

            assertThatThrownBy(() -> execute(theirs, "SELECT * FROM only_mine")).isInstanceOf(SQLException.class);
            assertThat(db.jdbcUrl()).isNotEqualTo(other.jdbcUrl());
        }
    }

    @Test
    void anUnreachablePostgresFailsTheRunWhenRequired() {
        PostgresServer nowhere = PostgresServer.at("127.0.0.1", 1, "postgres", "", "test", true);

        assertThatThrownBy(nowhere::createIsolatedSchema)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("127.0.0.1:1/test").hasMessageContaining("required");
    }

    @Test
    void anUnreachablePostgresAbortsWithTheReasonWhenNotRequired() {
        PostgresServer nowhere = PostgresServer.at("127.0.0.1", 1, "postgres", "", "test", false);

        assertThatThrownBy(nowhere::createIsolatedSchema)
                .isInstanceOf(TestAbortedException.class).hasMessageContaining("CI=true");
    }

    private static int merge(Connection connection, String id, long bytes) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(MERGE)) {
            statement.setString(1, id);
            statement.setLong(2, bytes);
            return statement.executeUpdate();
        }
    }

    private static void execute(Connection connection, String sql) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    private static long count(Connection connection, String table) throws SQLException {
        try (Statement statement = connection.createStatement(); ResultSet rs = statement.executeQuery("SELECT COUNT(*) FROM " + table)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
