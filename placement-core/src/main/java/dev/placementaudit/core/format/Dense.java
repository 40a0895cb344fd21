package dev.placementaudit.core.format;

import java.util.Optional;
import java.util.OptionalLong;

/** Plain elements of {@code bytesPerElement} bytes each. Equal by width: {@code Dense(4)} matches FP32 and Int32 alike. */
public record Dense(int bytesPerElement) implements TensorEncoding {
    public Dense {
        if (bytesPerElement <= 0) {
            throw new IllegalArgumentException("Dense bytesPerElement must be > 0, was " + bytesPerElement);
        }
    }

    @Override
    public String label() {
        return "Dense(" + bytesPerElement + "B)";
    }

    @Override
    public OptionalLong physicalBytes(long elementCount) {
        if (elementCount < 0) {
            throw new IllegalArgumentException("elementCount must be >= 0, was " + elementCount);
        }
        return OptionalLong.of(Math.multiplyExact(elementCount, (long) bytesPerElement));
    }

    @Override
    public Optional<BlockSpec> blockSpec() {
        return Optional.empty();
    }
}
