package dev.placementaudit.core.placement;

/** Where a tensor's bytes live. The resolver only ever chooses HOST_HEAP, HOST_OFFHEAP or MMAP_FILE. */
public enum MemoryDomain {
    /** The managed heap (JVM/ART arrays, Kotlin/Native heap, JS linear memory). */
    HOST_HEAP,
    /** Host memory the GC does not manage (FFM segment, direct buffer, malloc); freed by its scope. */
    HOST_OFFHEAP,
    HOST_PINNED,
    /** A read-only memory-mapped file region, paged in and evicted by the OS. */
    MMAP_FILE,
    UNIFIED,
    DEVICE_LOCAL
}
