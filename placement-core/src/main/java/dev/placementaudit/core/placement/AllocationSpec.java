package dev.placementaudit.core.placement;

import dev.placementaudit.core.format.Format;

import java.util.Objects;

/** The resolver's answer for one allocation: format, size, domain, lifetime, mutability and alignment. */
public record AllocationSpec(Format format, long elementCount, MemoryDomain domain, ScopeKind scope,
                             boolean mutable, int alignment) {
    public static final int DEFAULT_ALIGNMENT = 64;

    public AllocationSpec {
        Objects.requireNonNull(format, "format");
        Objects.requireNonNull(domain, "domain");
        Objects.requireNonNull(scope, "scope");
        if (elementCount < 0) {
            throw new IllegalArgumentException("elementCount must be >= 0, was " + elementCount);
        }
        if (alignment <= 0 || Integer.bitCount(alignment) != 1) {
            throw new IllegalArgumentException("alignment must be a power of two, was " + alignment);
        }
    }
}
