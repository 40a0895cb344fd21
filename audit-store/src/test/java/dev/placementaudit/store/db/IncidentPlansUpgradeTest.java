package dev.placementaudit.store.db;

import dev.placementaudit.store.incidents.Incidents;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.TestDatabase;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.HexFormat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * V21: a deployment's part in an incident keeps its pair of plans as 32 bytes each; rows written before keep the same
 * plans, and an incident's detail names them in hex as it did. A row naming something that is no digest stops the
 * migration with its name, and nothing changes.
 */
class IncidentPlansUpgradeTest {
    private static final String FROM = "0f".repeat(32);
    private static final String TO = "a1".repeat(32);

    @DatabaseTest
    void theRowsWrittenBeforeKeepTheirPlans(TestDatabase db) throws Exception {
        Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").target("20").load().migrate();
        try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.executeUpdate("INSERT INTO incidents (incident_id, model_id, from_release, to_release, primary_kind, kinds, cause, tensor_count, "
                    + "tensors_digest, tensors, state, first_seen, last_seen, version, updated_at) VALUES ('inc-1', 'm', 'r1', 'r2', 'LOST_MAPPING', "
                    + "'LOST_MAPPING', 'a cause', 1, '" + "cd".repeat(32) + "', 't1', 'OPEN', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, 1, CURRENT_TIMESTAMP)");
            for (String[] row : new String[][]{{"edge-1", "'" + FROM + "'", "'" + TO + "'"}, {"edge-2", "NULL", "NULL"}}) {
                s.executeUpdate("INSERT INTO incident_deployments (incident_id, deployment_id, model_id, showing, loads, bytes_moved, offheap_delta, "
                        + "heap_delta, mapped_delta, first_seen, last_seen, last_load_id, from_plan, to_plan) VALUES ('inc-1', '" + row[0]
                        + "', 'm', TRUE, 1, 16, 16, 0, -16, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, 'l-" + row[0] + "', " + row[1] + ", " + row[2] + ")");
            }
        }
        Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").load().migrate();
        try (Connection c = db.dataSource().getConnection(); PreparedStatement s = c.prepareStatement(
                "SELECT from_plan, to_plan FROM incident_deployments ORDER BY deployment_id"); ResultSet rs = s.executeQuery()) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getBytes(1)).isEqualTo(HexFormat.of().parseHex(FROM));
            assertThat(rs.getBytes(2)).isEqualTo(HexFormat.of().parseHex(TO));
            assertThat(rs.next()).isTrue();
            assertThat(rs.getBytes(1)).isNull();
            assertThat(rs.getBytes(2)).isNull();
        }
        try (Connection c = db.dataSource().getConnection()) {
            assertThat(Incidents.find(c, "inc-1").orElseThrow().deployments())
                    .extracting(d -> d.deploymentId() + " " + d.fromPlan() + " " + d.toPlan())
                    .containsExactly("edge-1 " + FROM + " " + TO, "edge-2 null null");
        }
    }

    @DatabaseTest
    void aRowNamingNoDigestStopsTheMigration(TestDatabase db) throws Exception {
        Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").target("20").load().migrate();
        try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.executeUpdate("INSERT INTO incident_deployments (incident_id, deployment_id, model_id, showing, loads, bytes_moved, offheap_delta, "
                    + "heap_delta, mapped_delta, first_seen, last_seen, last_load_id, from_plan, to_plan) VALUES ('inc-1', 'edge-1', 'm', TRUE, 1, "
                    + "16, 16, 0, -16, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, 'l-1', 'not-a-digest', NULL)");
        }
        assertThatThrownBy(() -> Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").load().migrate())
                .isInstanceOf(FlywayException.class).hasStackTraceContaining("incident inc-1 of deployment edge-1 names a plan that is no SHA-256");
    }
}
