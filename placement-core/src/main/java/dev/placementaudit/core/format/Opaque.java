package dev.placementaudit.core.format;

import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * An encoding SKaiNET has no model of (Q3_K, IQ*, MXFP4, ...): its size is whatever the file says, and no
 * kernel feeds it, so it can never be mapped nor kept as stored under a dense-only kernel set.
 */
public record Opaque(String name, long rawBytes) implements TensorEncoding {
    public static final String SPEC_PREFIX = "Opaque:";

    public Opaque {
        Objects.requireNonNull(name, "name");
        if (name.isBlank()) {
            throw new IllegalArgumentException("Opaque encoding needs a name");
        }
        if (rawBytes < 0) {
            throw new IllegalArgumentException("Opaque rawBytes must be >= 0, was " + rawBytes);
        }
    }

    @Override
    public String label() {
        return name;
    }

    /** Prefixed so that an opaque {@code Q3_K} can never be read back as a known encoding. */
    @Override
    public String spec() {
        return SPEC_PREFIX + name;
    }

    @Override
    public OptionalLong physicalBytes(long elementCount) {
        return OptionalLong.of(rawBytes);
    }

    @Override
    public Optional<BlockSpec> blockSpec() {
        return Optional.empty();
    }
}
