package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.resolution.LoadIdentity;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The loads this worker resolved lately, by load id, with what each said it was ({@link LoadIdentity}): a load that comes
 * again under a remembered id with another identity is a conflict, dead-lettered instead of resolved, so its decisions
 * never reach the store under another load's id. The same load again passes (a retry: the store keeps the first copy).
 * Only the latest {@code capacity} loads are remembered, and only on the loop thread, in log order; the store checks
 * every load against all it holds. A load remembered from a transaction that aborted is still a record of the log, so
 * what it makes of the load that follows holds after the rewind too.
 */
final class RecentLoads {
    private final Map<String, LoadIdentity> seen;

    RecentLoads(int capacity) {
        this.seen = new LinkedHashMap<>(Math.min(capacity, 1 << 16), 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, LoadIdentity> eldest) {
                return size() > capacity;
            }
        };
    }

    /** Why this load is a conflict with one seen lately under its id; null when it is new, or the same load again (then remembered). */
    String conflict(LoadResolved summary) {
        String loadId = summary.getLoadId().toString();
        LoadIdentity identity = LoadIdentity.of(summary);
        LoadIdentity first = seen.putIfAbsent(loadId, identity);
        return first == null ? null : identity.conflictWith(loadId, first, "this worker resolved");
    }
}
