package db.migration;

import org.flywaydb.core.api.migration.BaseJavaMigration;
import org.flywaydb.core.api.migration.Context;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;

/**
 * A load's build names the runtime that made it when that runtime plans by rules of its own (llama.cpp: its build, CPU
 * features and mmap; docs/runtimes.md): {@code load_builds.runtime}, null for every build stored before and for
 * SKaiNET's rules, so no key changes ({@code LoadContexts.Dimension#digest} leaves trailing nulls out). The {@code loads}
 * view gains the column at its end, as V19 made it otherwise; the views over it stay as they are.
 */
public class V23__runtime_in_a_loads_build extends BaseJavaMigration {
    @Override
    public void migrate(Context context) throws Exception {
        Connection c = context.getConnection();
        boolean postgres = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
        execute(c, "ALTER TABLE load_builds ADD COLUMN runtime VARCHAR(200)");
        execute(c, loadsView(postgres, true));
    }

    /** {@code loads} as V19 made it, and with the build's runtime at its end (what an upgrade test undoes). */
    public static String loadsView(boolean postgres, boolean withRuntime) {
        String plan = hex(postgres, "r.plan_bytes");
        String previousPlan = hex(postgres, "r.previous_plan_bytes");
        return """
                CREATE OR REPLACE VIEW loads AS
                SELECT r.load_id, r.deployment_id, s.cluster, s.host, r.release_name, r.model_id, b.model_name, b.model_sha256, s.platform_name,
                       s.profile_name, r.occurred_at, r.tensor_count, r.stored_bytes, r.resident_bytes, r.heap_bytes, r.offheap_bytes, r.mapped_bytes,
                       r.heap_tensors, r.offheap_tensors, r.mapped_tensors, b.resolver_version, b.policy_digest, r.resolved_at, r.complete,
                       r.completed_at, r.summary_partition, r.summary_offset, %1$s AS plan_digest, r.previous_load_id, r.previous_release,
                       %2$s AS previous_plan_digest, r.source_offset, r.site_key, r.build_key%3$s
                FROM load_rows r
                LEFT JOIN load_sites s ON s.site_key = r.site_key
                LEFT JOIN load_builds b ON b.build_key = r.build_key""".formatted(plan, previousPlan, withRuntime ? ", b.runtime" : "");
    }

    private static String hex(boolean postgres, String column) {
        return postgres ? "encode(" + column + ", 'hex')" : "LOWER(RAWTOHEX(" + column + "))";
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
