package dev.placementaudit.store.ingest;

import dev.placementaudit.events.LoadResolved;

import java.sql.Timestamp;
import java.util.List;

/** How a LoadResolved becomes a {@code loads} row. */
final class StoredLoad {
    static final List<String> COLUMNS = List.of("load_id", "deployment_id", "cluster", "host", "release_name", "model_id", "model_name",
            "model_sha256", "platform_name", "profile_name", "occurred_at", "tensor_count", "stored_bytes", "resident_bytes", "heap_bytes",
            "offheap_bytes", "mapped_bytes", "heap_tensors", "offheap_tensors", "mapped_tensors", "resolver_version", "policy_digest",
            "resolved_at", "complete", "summary_partition", "summary_offset", "plan_digest");
    static final List<String> TYPES = List.of("VARCHAR(36)", "VARCHAR(200)", "VARCHAR(200)", "VARCHAR(200)", "VARCHAR(200)", "VARCHAR(200)",
            "VARCHAR(500)", "VARCHAR(64)", "VARCHAR(100)", "VARCHAR(100)", "TIMESTAMP WITH TIME ZONE", "INTEGER", "BIGINT", "BIGINT", "BIGINT",
            "BIGINT", "BIGINT", "INTEGER", "INTEGER", "INTEGER", "VARCHAR(100)", "VARCHAR(64)", "TIMESTAMP WITH TIME ZONE", "BOOLEAN",
            "INTEGER", "BIGINT", "VARCHAR(64)");

    private StoredLoad() {
    }

    static String overflow(LoadResolved l) {
        for (String value : List.of(l.getDeploymentId(), l.getCluster(), l.getHost(), l.getRelease(), l.getModelId())) {
            if (value.length() > 200) {
                return "an identifier over 200 characters: '" + value.substring(0, 40) + "...'";
            }
        }
        if (l.getModelName().length() > 500 || l.getPlatformName().length() > 100 || l.getProfileName().length() > 100) {
            return "a model, platform or profile name over its column's length";
        }
        return null;
    }

    /**
     * @param partition and {@code offset}: where the summary stands in the log, which orders the hash chain. The plan
     *                  digest is the one the summary names until the load completes with the plan its decisions make.
     */
    static Object[] values(LoadResolved l, int partition, long offset) {
        return new Object[]{l.getLoadId().toString(), l.getDeploymentId(), l.getCluster(), l.getHost(), l.getRelease(), l.getModelId(),
                l.getModelName(), l.getModelSha256(), l.getPlatformName(), l.getProfileName(), Timestamp.from(l.getLoadOccurredAt()),
                l.getTensorCount(), l.getStoredBytes(), l.getResidentBytes(), l.getHeapBytes(), l.getOffHeapBytes(), l.getMappedBytes(),
                l.getHeapTensors(), l.getOffHeapTensors(), l.getMappedTensors(), l.getResolverVersion(), l.getPolicyDigest(),
                Timestamp.from(l.getResolvedAt()), false, partition, offset, StoredPlans.carried(l.getPlanDigest())};
    }
}
