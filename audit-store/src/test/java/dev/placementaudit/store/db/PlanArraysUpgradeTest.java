package dev.placementaudit.store.db;

import dev.placementaudit.schemas.PlanDigest;
import dev.placementaudit.store.plans.StoredPlans;
import dev.placementaudit.testkit.DatabaseTargets;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.TestDatabase;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * V22: on PostgreSQL a plan's tensors become one row of arrays, and {@code plan_tensors} a view that gives the rows
 * back as they were written (values, order, text that needs escaping); on H2 the table stays. What the table refused
 * the arrays refuse: arrays of different lengths, a negative size.
 */
class PlanArraysUpgradeTest {
    private static final String PLAN_A = "0a".repeat(32);
    private static final String PLAN_B = "0b".repeat(32);
    private static final String ODD = "tab\there, newline\nthere, a back\\slash, \\N, {braces}, \"quotes\", comma, and \u00e9\u4e2d";

    @DatabaseTest
    void theTensorsWrittenBeforeReadTheSame(TestDatabase db) throws Exception {
        Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").target("21").load().migrate();
        List<String> written = new ArrayList<>();
        try (Connection c = db.dataSource().getConnection(); PreparedStatement s = c.prepareStatement("INSERT INTO plan_tensors (plan_digest, "
                + String.join(", ", PlanDigest.COLUMNS) + ") VALUES (?, ?, ?, 'Q4_K', 'Q4_K', ?, ?, ?, ?, ?, ?, ?, 'MODEL', ?, 'MAPPED_OK', "
                + "'MAPPED_OK', ?, ?)")) {
            // Plan A's rows out of their order, plan B with one tensor.
            for (Object[] row : new Object[][]{{PLAN_A, 2, "blk.2" + ODD, 0L, false, 3L, "MMAP_FILE", true, "", "mapped"},
                    {PLAN_A, 0, "blk.0", 4096L, true, 8192L, "HOST_OFFHEAP", false, "REENCODED,ALIGNMENT", "re-encoded" + ODD},
                    {PLAN_A, 1, "", Long.MAX_VALUE, false, 0L, "HOST_HEAP", false, "", ""},
                    {PLAN_B, 0, "only", 1L, false, 1L, "MMAP_FILE", true, "", "one"}}) {
                s.setString(1, (String) row[0]);
                s.setInt(2, (Integer) row[1]);
                s.setString(3, (String) row[2]);
                s.setString(4, "Q4_K " + row[1]);
                s.setLong(5, (Long) row[3] / 2);
                s.setLong(6, (Long) row[3]);
                s.setBoolean(7, (Boolean) row[4]);
                s.setString(8, "resident " + row[1]);
                s.setLong(9, (Long) row[5]);
                s.setString(10, (String) row[6]);
                s.setBoolean(11, (Boolean) row[7]);
                s.setString(12, (String) row[8]);
                s.setString(13, (String) row[9]);
                s.executeUpdate();
            }
            written.addAll(rows(c));
        }
        assertThat(written).hasSize(4);

        Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").load().migrate();
        try (Connection c = db.dataSource().getConnection()) {
            assertThat(rows(c)).as("every value of every row, in tensor order").containsExactlyElementsOf(written);
            assertThat(StoredPlans.tensorValues(c, PLAN_A)).extracting(values -> values[0]).containsExactly(0, 1, 2);
            assertThat(count(c, "SELECT COUNT(*) FROM load_tensors")).as("the view over loads still reads the plans").isZero();
            String type;
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT table_type FROM information_schema.tables "
                    + "WHERE UPPER(table_name) = 'PLAN_TENSORS' AND UPPER(table_schema) = UPPER(CURRENT_SCHEMA)")) {
                assertThat(rs.next()).as("plan_tensors is there").isTrue();
                type = rs.getString(1);
            }
            if (db.kind() == TestDatabase.Kind.POSTGRESQL) {
                assertThat(count(c, "SELECT COUNT(*) FROM plan_tensor_arrays")).as("one row per plan").isEqualTo(2);
                assertThat(type).isEqualTo("VIEW");
            } else {
                assertThat(type).as("H2 keeps its table").isEqualTo("BASE TABLE");
            }
        }
    }

    /** PostgreSQL only: H2 keeps the table of V8, whose constraints are tested with it. */
    @Test
    void arraysOfDifferentLengthsOrANegativeSizeAreRefused() throws Exception {
        try (TestDatabase db = DatabaseTargets.open(TestDatabase.Kind.POSTGRESQL)) {
            refusesMalformedArrays(db);
        }
    }

    private static void refusesMalformedArrays(TestDatabase db) throws Exception {
        Flyway.configure().dataSource(db.dataSource()).locations("classpath:db/migration").load().migrate();
        String insert = "INSERT INTO plan_tensor_arrays (plan_digest, " + String.join(", ", PlanDigest.COLUMNS) + ") VALUES ('" + PLAN_A
                + "', %s, '{a,b}', '{Q4_K,Q4_K}', '{Q4_K,Q4_K}', '{f,f}', '{1,1}', %s, '{f,f}', '{f,f}', '{1,1}', '{MMAP_FILE,MMAP_FILE}', "
                + "'{MODEL,MODEL}', '{t,t}', '{MAPPED_OK,MAPPED_OK}', '{MAPPED_OK,MAPPED_OK}', '{\"\",\"\"}', '{r,r}')";
        try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
            assertThatThrownBy(() -> s.executeUpdate(String.format(insert, "'{0,1,2}'", "'{1,1}'"))).isInstanceOf(SQLException.class)
                    .hasMessageContaining("plan_tensor_arrays_same_length");
            assertThatThrownBy(() -> s.executeUpdate(String.format(insert, "'{0,1}'", "'{1,-1}'"))).isInstanceOf(SQLException.class)
                    .hasMessageContaining("plan_tensor_arrays_sizes_not_negative");
            assertThat(s.executeUpdate(String.format(insert, "'{0,1}'", "'{1,1}'"))).as("the same plan, well formed").isEqualTo(1);
            assertThat(count(c, "SELECT COUNT(*) FROM plan_tensors WHERE plan_digest = '" + PLAN_A + "'")).isEqualTo(2);
        }
    }

    /** Every plan tensor row, every column as text, by plan and tensor. */
    private static List<String> rows(Connection c) throws SQLException {
        List<String> rows = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT plan_digest, " + String.join(", ", PlanDigest.COLUMNS)
                + " FROM plan_tensors ORDER BY plan_digest, tensor_index")) {
            int columns = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                Object[] row = new Object[columns];
                for (int i = 0; i < columns; i++) {
                    row[i] = rs.getObject(i + 1);
                }
                rows.add(Arrays.toString(row));
            }
        }
        return rows;
    }

    private static long count(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
