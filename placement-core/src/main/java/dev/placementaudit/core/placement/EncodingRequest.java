package dev.placementaudit.core.placement;

import dev.placementaudit.core.format.DType;
import dev.placementaudit.core.format.Opaque;
import dev.placementaudit.core.format.TensorEncoding;

import java.util.Objects;

/** What the loader does to a weight's encoding: keep the file's bytes, or re-encode them at load. */
public sealed interface EncodingRequest {
    KeepAsStored KEEP_AS_STORED = new KeepAsStored();

    record KeepAsStored() implements EncodingRequest {
    }

    record DequantizeTo(DType dtype) implements EncodingRequest {
        public DequantizeTo {
            Objects.requireNonNull(dtype, "dtype");
        }
    }

    record RequantizeTo(TensorEncoding encoding) implements EncodingRequest {
        public RequantizeTo {
            Objects.requireNonNull(encoding, "encoding");
            if (encoding instanceof Opaque) {
                throw new IllegalArgumentException("cannot requantize to an opaque encoding: " + encoding.label());
            }
        }
    }
}
