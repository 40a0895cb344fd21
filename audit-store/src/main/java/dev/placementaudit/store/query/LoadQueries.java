package dev.placementaudit.store.query;

import dev.placementaudit.store.db.ById;
import dev.placementaudit.store.db.Filter;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.ingest.LoadIds;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * What {@code store where} and the dashboard's load, tensor and history views read: loads (newest first), one load's
 * every tensor with what its runtime observed and what was set aside under its id, a tensor's history across releases.
 */
public final class LoadQueries {
    public record LoadSummary(String loadId, String deploymentId, String cluster, String host, String release, String modelId,
                              String modelName, String platform, String profile, Instant occurredAt, boolean complete, int tensorCount,
                              long heapBytes, long offHeapBytes, long mappedBytes, int heapTensors, int offHeapTensors, int mappedTensors,
                              String resolverVersion, String policyDigest, int deadLetteredRecords, String planDigest,
                              Long observedHeapBytes, Long observedOffHeapBytes, Long observedMappedBytes, String runtime) {
    }

    public record TensorRow(String name, int index, String storedFormat, long storedBytes, String residentFormat, long residentBytes,
                            String domain, String scope, String reasonCode, String placementReason, String mappingBlockers, String reason,
                            boolean sizeEstimated) {
    }

    /**
     * @param observed what the load's runtime measured it held (null: no observation, or not yet)
     * @param divergences the tensors its runtime placed otherwise than the reference
     * @param runtimeFindings what those gave (docs/observations.md), each naming its incident
     */
    public record LoadDetail(LoadSummary load, List<TensorRow> tensors, int findings, Observed observed, List<DivergenceRow> divergences,
                             List<RuntimeFinding> runtimeFindings, List<SetAside> setAside) {
    }

    /**
     * A record that came under a load's id but is no part of the load, dead-lettered: a load id that came again with other
     * content ({@code LOAD_ID_CONFLICT}), an observation naming another deployment ({@code DEPLOYMENT_MISMATCH}).
     */
    public record SetAside(String detail, String topic, int partition, long offset, String error, Instant at) {
    }

    /**
     * What a runtime measured after a load, per domain as observed minus the reading before it (null where it did not
     * measure): beside the plan's bytes, the load's planned heap, off-heap and mapped totals.
     */
    public record Observed(Instant observedAt, String method, Long heapBytes, Long offHeapBytes, Long mappedBytes, Long fileMappedBytes,
                           Long fileResidentBytes, Long anonRssDeltaBytes) {
    }

    public record DivergenceRow(String tensorName, int tensorIndex, String runtimeDomain, long runtimeBytes, String referenceDomain,
                                long referenceBytes, String referenceReasonCode, String referenceReason) {
    }

    public record RuntimeFinding(String kind, String incidentId, long bytesMoved, long offHeapDelta, long mappedDelta) {
    }

    static final String LOAD_COLUMNS = "load_id, deployment_id, cluster, host, release_name, model_id, model_name, platform_name, "
            + "profile_name, occurred_at, complete, tensor_count, heap_bytes, offheap_bytes, mapped_bytes, heap_tensors, offheap_tensors, "
            + "mapped_tensors, resolver_version, policy_digest, "
            // Records of the load the store set aside: a load missing one says so instead of staying silently incomplete.
            + "(SELECT COUNT(*) FROM dead_letters x WHERE x.load_id = loads.load_id AND x.detail NOT IN (" + LoadIds.NOT_THE_LOADS + ")) AS dead_lettered, "
            // The placement plan, once the load is complete with it.
            + "CASE WHEN complete = TRUE THEN plan_digest END AS plan_digest, "
            // What the runtime observed it held, per domain, when it reported (docs/observations.md).
            + "(SELECT o.heap_after - o.heap_before FROM load_observations o WHERE o.load_id = loads.load_id AND o.deployment_id = loads.deployment_id) AS observed_heap, "
            + "(SELECT o.direct_after - o.direct_before FROM load_observations o WHERE o.load_id = loads.load_id AND o.deployment_id = loads.deployment_id) AS observed_offheap, "
            + "(SELECT o.mapped_after - o.mapped_before FROM load_observations o WHERE o.load_id = loads.load_id AND o.deployment_id = loads.deployment_id) AS observed_mapped, "
            // The runtime that made it, when it plans by rules of its own (llama.cpp: build, CPU features, mmap).
            + "runtime";


    private final DataSource database;

    LoadQueries(DataSource database) {
        this.database = database;
    }

    /** Loads, newest first; every filter optional. */
    public List<LoadSummary> loads(String deployment, String model, String release, int limit) throws SQLException {
        // The newest loads first, then their columns: the per-load subqueries run for the rows shown, not for every load
        // of the deployment (1,000 of them cost 7 ms in the query bench, against 1 ms for the top 20).
        Filter filter = new Filter().equal("deployment_id", deployment).equal("model_id", model).equal("release_name", release);
        String sql = "SELECT " + LOAD_COLUMNS + " FROM (SELECT * FROM loads" + filter.where() + " ORDER BY occurred_at DESC, load_id FETCH FIRST "
                + limit + " ROWS ONLY) loads ORDER BY occurred_at DESC, load_id";
        return Sql.list(database, sql, LoadQueries::summary, filter.args());
    }

    /** Where every tensor of one load landed. */
    public Optional<LoadDetail> load(String loadId) throws SQLException {
        try (Connection c = database.getConnection()) {
            Optional<LoadSummary> found = Sql.first(c, "SELECT " + LOAD_COLUMNS + " FROM loads WHERE " + ById.is(""), LoadQueries::summary, loadId);
            if (found.isEmpty()) {
                return Optional.empty();
            }
            LoadSummary load = found.get();
            List<TensorRow> tensors = Sql.list(c, "SELECT tensor_name, tensor_index, stored_format, stored_bytes, resident_format, "
                    + "resident_bytes, memory_domain, scope_kind, reason_code, placement_reason, mapping_blockers, reason, size_estimated FROM "
                    + "plan_tensors WHERE plan_digest = ? ORDER BY tensor_index", rs -> new TensorRow(rs.getString(1), rs.getInt(2), rs.getString(3),
                    rs.getLong(4), rs.getString(5), rs.getLong(6), rs.getString(7), rs.getString(8), rs.getString(9), rs.getString(10),
                    rs.getString(11), rs.getString(12), rs.getBoolean(13)), load.planDigest() == null ? "" : load.planDigest());
            int findings = (int) Sql.number(c, "SELECT COUNT(*) FROM findings WHERE load_id = ?", loadId);
            Observed observed = Sql.first(c, "SELECT observed_at, method, heap_after - heap_before, direct_after - direct_before, "
                    + "mapped_after - mapped_before, file_mapped, file_resident, anon_rss_delta FROM load_observations WHERE load_id = ? "
                    + "AND deployment_id = ?",
                    rs -> new Observed(rs.getTimestamp(1).toInstant(), rs.getString(2), Sql.longOrNull(rs, 3), Sql.longOrNull(rs, 4), Sql.longOrNull(rs, 5),
                            Sql.longOrNull(rs, 6), Sql.longOrNull(rs, 7), Sql.longOrNull(rs, 8)), loadId, load.deploymentId()).orElse(null);
            List<DivergenceRow> divergences = Sql.list(c, "SELECT tensor_name, tensor_index, runtime_domain, runtime_bytes, reference_domain, "
                    + "reference_bytes, reference_reason_code, reference_reason FROM load_divergences WHERE load_id = ? ORDER BY tensor_index",
                    rs -> new DivergenceRow(rs.getString(1), rs.getInt(2), rs.getString(3), rs.getLong(4), rs.getString(5), rs.getLong(6),
                            rs.getString(7), rs.getString(8)), loadId);
            List<RuntimeFinding> runtime = Sql.list(c, "SELECT kind, incident_id, bytes_moved, offheap_delta, mapped_delta FROM runtime_findings "
                    + "WHERE load_id = ? ORDER BY kind, incident_id", rs -> new RuntimeFinding(rs.getString(1), rs.getString(2), rs.getLong(3),
                    rs.getLong(4), rs.getLong(5)), loadId);
            List<SetAside> setAside = Sql.list(c, "SELECT detail, source_topic, source_partition, source_offset, error, dead_lettered_at FROM "
                    + "dead_letters WHERE load_id = ? AND detail IN (" + LoadIds.NOT_THE_LOADS + ") ORDER BY dead_lettered_at, source_topic, "
                    + "source_partition, source_offset", rs -> new SetAside(rs.getString(1), rs.getString(2), rs.getInt(3), rs.getLong(4),
                    rs.getString(5), rs.getTimestamp(6).toInstant()), loadId);
            return Optional.of(new LoadDetail(load, tensors, findings, observed, divergences, runtime, setAside));
        }
    }

    /** One tensor of one load, as the tensor's history across releases lists it. */
    public record TensorHistoryRow(String release, String loadId, Instant occurredAt, String domain, long residentBytes, String storedFormat,
                                   String residentFormat, String reasonCode, String reason) {
    }

    /** Releases with a complete load, in the order they first appeared. */
    public List<String> releases() throws SQLException {
        return Sql.list(database, "SELECT release_name, MIN(occurred_at) AS first FROM loads WHERE complete = TRUE GROUP BY release_name "
                + "ORDER BY first, release_name", rs -> rs.getString(1));
    }

    /**
     * Where one tensor of a deployment's model landed in each complete load, oldest first. The tensor is looked up
     * once per plan those loads name, then joined to them: on PostgreSQL a plan's tensors are unnested from their
     * arrays (V22), and joined load by load that was a plan's every tensor per load (64 ms for 250 loads, 2.5 ms so).
     * {@code OFFSET 0} keeps the planner from merging the two.
     */
    public List<TensorHistoryRow> tensorHistory(String deployment, String model, String tensor, int limit) throws SQLException {
        return Sql.list(database, "SELECT l.release_name, l.load_id, l.occurred_at, d.memory_domain, d.resident_bytes, d.stored_format, "
                + "d.resident_format, d.reason_code, d.reason FROM loads l JOIN (SELECT t.plan_digest, t.memory_domain, t.resident_bytes, "
                + "t.stored_format, t.resident_format, t.reason_code, t.reason FROM plan_tensors t WHERE t.tensor_name = ? AND t.plan_digest IN "
                + "(SELECT p.plan_digest FROM loads p WHERE p.deployment_id = ? AND p.model_id = ? AND p.complete = TRUE) OFFSET 0 ROWS) d "
                + "ON d.plan_digest = l.plan_digest WHERE l.deployment_id = ? AND l.model_id = ? AND l.complete = TRUE "
                + "ORDER BY l.occurred_at, l.load_id FETCH FIRST " + limit + " ROWS ONLY", rs -> new TensorHistoryRow(rs.getString(1),
                rs.getString(2), Sql.instant(rs, 3), rs.getString(4), rs.getLong(5), rs.getString(6), rs.getString(7), rs.getString(8),
                rs.getString(9)), tensor, deployment, model, deployment, model);
    }

    /** The latest complete load of a release, and of a runtime whose name begins with {@code runtime} when it is given. */
    static Optional<LoadSummary> latestComplete(Connection c, String deployment, String model, String release, String runtime) throws SQLException {
        List<Object> args = new ArrayList<>(List.of(deployment, model, release));
        if (runtime != null) {
            // The prefix is taken as written: an underscore or a percent sign in it is no wildcard.
            args.add(runtime.replace("!", "!!").replace("%", "!%").replace("_", "!_") + "%");
        }
        return Sql.first(c, "SELECT " + LOAD_COLUMNS + " FROM loads WHERE deployment_id = ? AND model_id = ? AND release_name = ? AND "
                + "complete = TRUE" + (runtime == null ? "" : " AND runtime LIKE ? ESCAPE '!'") + " ORDER BY summary_partition DESC, summary_offset DESC, "
                + "load_id DESC FETCH FIRST 1 ROWS ONLY", LoadQueries::summary, args.toArray());
    }


    static LoadSummary summary(ResultSet rs) throws SQLException {
        return new LoadSummary(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5), rs.getString(6),
                rs.getString(7), rs.getString(8), rs.getString(9), Sql.instant(rs, 10), rs.getBoolean(11), rs.getInt(12),
                rs.getLong(13), rs.getLong(14), rs.getLong(15), rs.getInt(16), rs.getInt(17), rs.getInt(18), rs.getString(19), rs.getString(20),
                rs.getInt(21), rs.getString(22), Sql.longOrNull(rs, 23), Sql.longOrNull(rs, 24), Sql.longOrNull(rs, 25), rs.getString(26));
    }
}
