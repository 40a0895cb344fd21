package dev.placementaudit.core.placement;

public enum WeightByteOrder {
    /** The file's canonical row-major blocks. */
    AS_STORED,
    /** Input-block-major order that packed kernels read; only a load-time permutation produces it. */
    KERNEL_FEED
}
