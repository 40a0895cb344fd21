package dev.placementaudit.store.regression;

/** What changed for a tensor, or for a load's totals, between two releases. */
public enum FindingKind {
    /** Was mapped, now charged to memory: the classic silent regression. */
    LOST_MAPPING,
    GAINED_MAPPING,
    /** Moved between heap and off-heap. */
    DOMAIN_CHANGED,
    /** Resident format changed (re-encoded, or no longer re-encoded). */
    FORMAT_CHANGED,
    TENSOR_ADDED,
    TENSOR_REMOVED,
    /** The load's off-heap total grew past the rule. */
    OFFHEAP_GROWTH,
    /** The load's heap total grew past the rule. */
    HEAP_GROWTH,
    /** The runtime held more off-heap than its plan, past the rule (docs/observations.md). */
    UNPLANNED_OFFHEAP,
    /** Bytes the plan maps were not found mapped by the runtime's own measure. */
    MAPPING_NOT_OBSERVED,
    /** The runtime placed tensors otherwise than the reference resolver decides. */
    DIVERGED;

    /** What a runtime said of its own load on one release (planned against observed), not a change between two releases. */
    public boolean ofRuntime() {
        return this == UNPLANNED_OFFHEAP || this == MAPPING_NOT_OBSERVED || this == DIVERGED;
    }
}
