package dev.placementaudit.bench;

import dev.placementaudit.store.plans.StoredPlans;

import java.sql.SQLException;
import java.sql.Statement;

/**
 * What a store of the fleet mix holds besides its load rows, written by SQL as the store leaves it: 80 plans of 146
 * tensors (plan p = model * 20 + deployment kind * 5 + release, release counted mod 5; from the second on a seventh of
 * its tensors are off-heap), each change between two plans once, each deployment's site and each model's build under
 * the four policies. {@link QueryLatency} and {@link GrowthBench} fill their loads on top of it.
 */
final class FleetFill {
    /** A 64-character hex digest of a SQL expression. */
    static String hex(String expression) {
        return String.format("md5(%1$s) || md5('x' || %1$s)", expression);
    }

    /** The plan number of model m, deployment d and release r (SQL expressions). */
    static String plan(String m, String d, String r) {
        return "(" + m + " * 20 + (" + d + " % 4) * 5 + (" + r + ") % 5)";
    }

    /** The 80 plans; those already there stay (a bench puts back what a prune dropped so). */
    static void plans(Statement s) throws SQLException {
        s.execute("INSERT INTO plans SELECT " + hex("'p' || g") + ", 146, md5('s' || g) || md5('t' || g) FROM generate_series(0, 79) g "
                + "ON CONFLICT DO NOTHING");
        // A plan's tensors as a store writes them: one row of arrays per plan (V22).
        s.execute(StoredPlans.insertRows("SELECT " + hex("'p' || (g / 146)") + " AS plan_digest, (g % 146)::int AS tensor_index, "
                + "'blk.' || (g % 146) || '.weight' AS tensor_name, 'Q4_K' AS dtype, 'Q4_K' AS stored_encoding, 'Q4_K' AS stored_format, "
                + "1048576::bigint AS element_count, 589824::bigint AS stored_bytes, FALSE AS size_estimated, "
                + "CASE WHEN (g / 146) % 5 > 0 AND g % 7 = 0 THEN 'Float32/Dense(4B)' ELSE 'Q4_K' END AS resident_format, "
                + "(CASE WHEN (g / 146) % 5 > 0 AND g % 7 = 0 THEN 4194304 ELSE 589824 END)::bigint AS resident_bytes, "
                + "CASE WHEN (g / 146) % 5 > 0 AND g % 7 = 0 THEN 'HOST_OFFHEAP' ELSE 'MMAP_FILE' END AS memory_domain, 'MODEL' AS scope_kind, "
                + "TRUE AS mapping_requested, CASE WHEN (g / 146) % 5 > 0 AND g % 7 = 0 THEN 'REENCODED_AT_LOAD' ELSE 'MAPPED_OK' END AS reason_code, "
                + "'MAPPED_OK' AS placement_reason, '' AS mapping_blockers, "
                + "'blk.' || (g % 146) || '.weight: mapped from the file, 589,824 bytes of Q4_K as stored' AS reason FROM generate_series(0, 80 * 146 - 1) g")
                + " ON CONFLICT DO NOTHING");
        // Each release's change, once per pair of plans: a seventh of the tensors re-encoded off the file.
        s.execute("INSERT INTO plan_findings SELECT " + hex("'p' || (pair - 1)") + ", " + hex("'p' || pair")
                + ", t / 7, 'LOST_MAPPING', 'blk.' || t || '.weight', 'MMAP_FILE', 'HOST_OFFHEAP', 589824, 4194304, 'Q4_K', 'Float32/Dense(4B)', "
                + "'mapped', 're-encoded at load' FROM generate_series(0, 79) pair, generate_series(0, 145, 7) t WHERE pair % 5 > 0 ON CONFLICT DO NOTHING");
    }

    /** Each deployment's site (its key, d), and each model's build under each of the four policies (m * 4 + d % 4), once. */
    static void sitesAndBuilds(Statement s, long deployments) throws SQLException {
        s.execute("INSERT INTO load_sites (site_key, cluster, host, platform_name, profile_name) SELECT d, 'eu-west-1', 'host-' || d, "
                + "(ARRAY['android','native','jvm','browser'])[d % 4 + 1], (ARRAY['edge','edge','desktop','desktop'])[d % 4 + 1] "
                + "FROM generate_series(0, " + (deployments - 1) + ") d");
        s.execute("INSERT INTO load_builds (build_key, model_name, model_sha256, resolver_version, policy_digest) SELECT m * 4 + p, "
                + "'Model ' || m, " + hex("'sha' || m") + ", 'bench/skainet-1192', " + hex("'policy' || p")
                + " FROM generate_series(0, 3) m, generate_series(0, 3) p");
    }

    private FleetFill() {
    }
}
