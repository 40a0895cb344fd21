package dev.placementaudit.core.format;

import java.util.Objects;
import java.util.OptionalLong;

/** A logical dtype plus its byte layout. Renders as SKaiNET does: {@code Float32/Q4_K}, {@code Float32/Dense(4B)}. */
public record Format(DType dtype, TensorEncoding encoding) {
    public Format {
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(encoding, "encoding");
    }

    public static Format dense(DType dtype) {
        return new Format(dtype, new Dense(dtype.sizeInBytes()));
    }

    public boolean isDense() {
        return encoding instanceof Dense;
    }

    public OptionalLong physicalBytes(long elementCount) {
        return encoding.physicalBytes(elementCount);
    }

    @Override
    public String toString() {
        return dtype.displayName() + "/" + encoding.label();
    }
}
