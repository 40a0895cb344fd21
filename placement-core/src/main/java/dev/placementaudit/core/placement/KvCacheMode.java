package dev.placementaudit.core.placement;

/** How the KV cache is stored; carried by profiles, priced per element. */
public enum KvCacheMode {
    FP32,
    BF16,
    /** TurboQuantPolar(4, 128): 76 bytes per 128 elements. */
    TURBOQUANT_4
}
