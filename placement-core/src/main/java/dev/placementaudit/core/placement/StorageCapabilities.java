package dev.placementaudit.core.placement;

import dev.placementaudit.core.format.BlockQuant;
import dev.placementaudit.core.format.Dense;
import dev.placementaudit.core.format.Opaque;
import dev.placementaudit.core.format.TensorEncoding;

import java.util.Objects;
import java.util.Set;

/**
 * What a platform can allocate, and which stored encodings a loader can serve straight from a mapping.
 *
 * <p>The servable set is configuration, not a constant: it grew from nothing (#1153) to {Dense(4), Q4_K, Q6_K}
 * (#1189) to the #1192 set, and will grow again as kernels arrive (domain Q1). Auditing a release means knowing
 * which set it ran with.
 */
public record StorageCapabilities(boolean supportsMappedFiles, boolean supportsOffHeap,
                                  Set<TensorEncoding> mappedServableEncodings) {
    /** SKaiNET #1192. */
    public static final Set<TensorEncoding> MAPPED_SERVABLE_DEFAULT = Set.of(new Dense(4), BlockQuant.Q4_K,
            BlockQuant.Q6_K, BlockQuant.Q5_K, BlockQuant.Q8_0, BlockQuant.Q4_0, BlockQuant.Q5_0, BlockQuant.Q5_1);
    /** SKaiNET #1189, kept so that audits of older runtimes can be reproduced. */
    public static final Set<TensorEncoding> MAPPED_SERVABLE_1189 = Set.of(new Dense(4), BlockQuant.Q4_K, BlockQuant.Q6_K);

    public static final StorageCapabilities FULL = new StorageCapabilities(true, true, MAPPED_SERVABLE_DEFAULT);
    /** Off-heap but no file mapping. */
    public static final StorageCapabilities NO_MAPPING = new StorageCapabilities(false, true, MAPPED_SERVABLE_DEFAULT);
    /** A browser: heap only. */
    public static final StorageCapabilities HEAP_ONLY = new StorageCapabilities(false, false, MAPPED_SERVABLE_DEFAULT);

    public StorageCapabilities {
        Objects.requireNonNull(mappedServableEncodings, "mappedServableEncodings");
        mappedServableEncodings = Set.copyOf(mappedServableEncodings);
        for (TensorEncoding encoding : mappedServableEncodings) {
            if (encoding instanceof Opaque) {
                throw new IllegalArgumentException("an opaque encoding cannot be mapped-servable: " + encoding.label());
            }
        }
    }

    public boolean canServeFromMapping(TensorEncoding storedEncoding) {
        return mappedServableEncodings.contains(storedEncoding);
    }

    public StorageCapabilities withMappedServableEncodings(Set<? extends TensorEncoding> encodings) {
        return new StorageCapabilities(supportsMappedFiles, supportsOffHeap, Set.copyOf(encodings));
    }

    public StorageCapabilities withOffHeap(boolean offHeap) {
        return new StorageCapabilities(supportsMappedFiles, offHeap, mappedServableEncodings);
    }

    public StorageCapabilities withMappedFiles(boolean mappedFiles) {
        return new StorageCapabilities(mappedFiles, supportsOffHeap, mappedServableEncodings);
    }
}
