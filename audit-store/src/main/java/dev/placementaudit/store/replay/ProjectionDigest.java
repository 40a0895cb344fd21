package dev.placementaudit.store.replay;

import dev.placementaudit.store.alerts.AlertOutbox;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.OffsetDateTime;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A digest of everything the projection derived from the log, table by table, in key order. Wall-clock columns
 * (when a row was written or published) are left out: a rebuild happens later by definition. Two projections
 * with equal digests hold the same rows, value for value.
 */
public final class ProjectionDigest {
    /** Table, its key order, and the columns that depend on the log alone. */
    private static final Map<String, String> TABLES = new LinkedHashMap<>();

    static {
        TABLES.put("loads", "SELECT load_id, deployment_id, cluster, host, release_name, model_id, model_name, model_sha256, platform_name, "
                + "profile_name, occurred_at, tensor_count, stored_bytes, resident_bytes, heap_bytes, offheap_bytes, mapped_bytes, heap_tensors, "
                + "offheap_tensors, mapped_tensors, resolver_version, policy_digest, resolved_at, complete, summary_partition, "
                + "summary_offset, plan_digest, previous_load_id, previous_release, previous_plan_digest, source_offset FROM %s.loads ORDER BY load_id");
        // Decisions staged for loads not complete yet (and, in a store chained before plans, those its chain covers).
        whole("decisions", "decision_id");
        TABLES.put("plans", "SELECT plan_digest, tensor_count, placement_signature FROM %s.plans ORDER BY plan_digest");
        whole("plan_tensors", "plan_digest, tensor_index");
        whole("plan_findings", "from_plan, to_plan, seq");
        // What the fleet view reads: each release's latest load in the log, with its comparison.
        whole("release_heads", "deployment_id, model_id, release_name");
        // The hash chain: a rebuild from the log must write the very same one.
        TABLES.put("chain_entries", "SELECT deployment_id, seq, load_id, prev_hash, load_hash, decisions_hash, entry_hash, encoding FROM %s.chain_entries "
                + "ORDER BY deployment_id, seq");
        TABLES.put("findings", "SELECT finding_id, load_id, previous_load_id, deployment_id, model_id, from_release, to_release, kind, "
                + "tensor_name, before_domain, after_domain, before_bytes, after_bytes, before_format, after_format, before_reason, after_reason "
                + "FROM %s.findings ORDER BY finding_id");
        TABLES.put("alerts", "SELECT alert_id, kind, deployment_id, model_id, from_release, to_release, from_load_id, to_load_id, "
                + "before_bytes, after_bytes, delta_bytes, rule_text, threshold_percent, threshold_bytes, " + AlertOutbox.TEXT_TOP_TENSORS + ", suppressed_by, "
                + AlertOutbox.TEXT_CAUSES + " FROM %1$s.alerts a " + AlertOutbox.withText("%1$s.") + " ORDER BY alert_id");
        // One incident per cause across the fleet, and each deployment's part in it (docs/incidents.md); the version and
        // when it last changed depend on how loads fell into batches, so they are left out.
        TABLES.put("incidents", "SELECT incident_id, model_id, from_release, to_release, primary_kind, kinds, cause, before_domain, "
                + "after_domain, before_reason, after_reason, before_format, after_format, tensor_count, tensors_digest, tensors, state, "
                + "first_seen, last_seen FROM %s.incidents ORDER BY incident_id");
        whole("incident_deployments", "incident_id, deployment_id");
        // What runtimes said they did (docs/observations.md): their observations, divergences, and the findings drawn from them.
        whole("load_observations", "load_id, deployment_id");
        whole("load_divergences", "load_id, tensor_index");
        whole("runtime_findings", "load_id, incident_id");
    }

    /** A table every column of which the log alone decides, in the order of {@code key}. */
    private static void whole(String table, String key) {
        TABLES.put(table, "SELECT * FROM %s." + table + " ORDER BY " + key);
    }

    private ProjectionDigest() {
    }

    public static List<String> tables() {
        return List.copyOf(TABLES.keySet());
    }

    /** Per table: row count and SHA-256 of its rows. */
    public static Map<String, String> of(Connection c, String schema) throws SQLException {
        Map<String, String> digests = new LinkedHashMap<>();
        for (Map.Entry<String, String> table : TABLES.entrySet()) {
            MessageDigest sha = sha256();
            long rows = 0;
            try (Statement s = c.createStatement()) {
                s.setFetchSize(5_000);
                try (ResultSet rs = s.executeQuery(String.format(table.getValue(), schema))) {
                    ResultSetMetaData meta = rs.getMetaData();
                    while (rs.next()) {
                        for (int i = 1; i <= meta.getColumnCount(); i++) {
                            Object value = rs.getObject(i);
                            String text = value instanceof Timestamp ts ? Long.toString(ts.getTime())
                                    : value instanceof byte[] bytes ? HexFormat.of().formatHex(bytes)
                                    : value instanceof OffsetDateTime odt ? Long.toString(odt.toInstant().toEpochMilli())
                                    : String.valueOf(value);
                            sha.update(text.getBytes(StandardCharsets.UTF_8));
                            sha.update((byte) 0);
                        }
                        sha.update((byte) '\n');
                        rows++;
                    }
                }
            }
            digests.put(table.getKey(), rows + " rows " + HexFormat.of().formatHex(sha.digest()).substring(0, 16));
        }
        return digests;
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
