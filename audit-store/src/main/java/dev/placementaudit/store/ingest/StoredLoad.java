package dev.placementaudit.store.ingest;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.store.chain.ChainHead;
import dev.placementaudit.store.chain.HashChain;
import dev.placementaudit.store.plans.StoredPlans;
import dev.placementaudit.store.regression.LoadRef;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/** How a LoadResolved becomes a {@code load_rows} row (read through the {@code loads} view). */
final class StoredLoad {
    /**
     * The columns of a {@code load_rows} row: the load's own values, with its site and build as keys ({@link LoadContexts});
     * the {@code loads} view adds their values back, and the plans' digests as hex.
     */
    static final List<String> COLUMNS = List.of("load_id", "deployment_id", "release_name", "model_id", "site_key", "build_key", "occurred_at",
            "tensor_count", "stored_bytes", "resident_bytes", "heap_bytes", "offheap_bytes", "mapped_bytes", "heap_tensors", "offheap_tensors",
            "mapped_tensors", "resolved_at", "complete", "summary_partition", "summary_offset", "plan_bytes", "completed_at",
            "previous_load_id", "previous_release", "previous_plan_bytes", "source_offset", "is_head", "is_latest", "chain_seq", "chain_hash");
    /** The row written once: with its completion and its predecessor when the load completes in the batch that brings its summary. */
    static final String INSERT = "INSERT INTO load_rows (" + String.join(", ", COLUMNS) + ") VALUES ("
            + String.join(", ", Collections.nCopies(COLUMNS.size(), "?")) + ")";

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
     * @param keys      its site and build
     * @param partition and {@code offset}: where the summary stands in the log, which orders the hash chain
     * @param completion how the load completes in this batch; null when it does not yet (the row names the plan its
     *                   summary names, until the load completes with the plan its decisions make)
     * @param head       whether it completes as its release's head ({@link ReleaseHeads#mark})
     * @param latest     whether it completes as its deployment's latest load of its model
     * @param entry      its entry in its deployment's hash chain when it completes; null when it does not yet
     */
    static Object[] values(LoadResolved l, LoadContexts.Keys keys, int partition, long offset, Completion completion, boolean head,
                           boolean latest, ChainHead entry) {
        LoadRef previous = completion == null ? null : completion.previous();
        return new Object[]{l.getLoadId().toString(), l.getDeploymentId(), l.getRelease(), l.getModelId(), keys.site(), keys.build(),
                Timestamp.from(l.getLoadOccurredAt()), l.getTensorCount(), l.getStoredBytes(), l.getResidentBytes(), l.getHeapBytes(),
                l.getOffHeapBytes(), l.getMappedBytes(), l.getHeapTensors(), l.getOffHeapTensors(), l.getMappedTensors(),
                Timestamp.from(l.getResolvedAt()), completion != null, partition, offset,
                StoredPlans.bytes(completion == null ? StoredPlans.carried(l.getPlanDigest()) : completion.load().planDigest()),
                completion == null ? null : Timestamp.from(completion.completedAt()),
                previous == null ? null : previous.loadId(), previous == null ? null : previous.release(),
                previous == null ? null : StoredPlans.bytes(previous.planDigest()), l.getSourceOffset(), head, latest,
                entry == null ? null : entry.seq(), entry == null ? null : HashChain.bytes(entry.entryHash())};
    }

    /**
     * The load as its chain entry covers it ({@link HashChain#LOAD_COLUMNS_2}), from its summary: the values its row
     * holds once written with this plan, its site and build as the {@code loads} view joins them back (a key names
     * exactly the values it was made of, {@link LoadContexts}).
     */
    static HashChain.Link link(LoadResolved l, int partition, long offset, String plan) {
        return new HashChain.Link(l.getLoadId().toString(), l.getDeploymentId(), partition, offset, Arrays.asList(l.getLoadId().toString(),
                l.getDeploymentId(), l.getCluster(), l.getHost(), l.getRelease(), l.getModelId(), l.getModelName(), l.getModelSha256(),
                l.getPlatformName(), l.getProfileName(), Timestamp.from(l.getLoadOccurredAt()), l.getTensorCount(), l.getStoredBytes(),
                l.getResidentBytes(), l.getHeapBytes(), l.getOffHeapBytes(), l.getMappedBytes(), l.getHeapTensors(), l.getOffHeapTensors(),
                l.getMappedTensors(), l.getResolverVersion(), l.getPolicyDigest(), Timestamp.from(l.getResolvedAt()), partition, offset, plan));
    }

    /**
     * How a load completes: with its plan (in {@code load}) and the predecessor it is compared with (null for a first
     * release). Where the plan places each tensor is read only if a comparison needs it ({@link
     * dev.placementaudit.store.regression.RegressionDetector#compare}).
     */
    record Completion(LoadRef load, LoadRef previous, Instant completedAt, long heapBytes, long offHeapBytes, long mappedBytes) {
    }
}
