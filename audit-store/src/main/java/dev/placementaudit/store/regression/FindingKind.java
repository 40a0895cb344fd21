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
    HEAP_GROWTH
}
