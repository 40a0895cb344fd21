package dev.placementaudit.core.format;

import java.util.Optional;
import java.util.OptionalLong;

/**
 * Per-tensor packings (ternary and BitNet). Two of them cannot be priced from an element count alone: their
 * size depends on the row count, so a file's own byte count has to stand in (domain 1.7).
 */
public enum PackedEncoding implements TensorEncoding {
    TERNARY_PACKED("Ternary", 2.0) {
        @Override
        public OptionalLong physicalBytes(long n) {
            return OptionalLong.of(TensorEncoding.blockBytes(n, 4, 1));
        }
    },
    /** Four elements per byte plus a trailing FP32 scale. */
    BITNET_B1_58("BitNet-b1.58", 2.0) {
        @Override
        public OptionalLong physicalBytes(long n) {
            return OptionalLong.of(TensorEncoding.blockBytes(n, 4, 1) + 4);
        }
    },
    /** 8 planes x rows x cols / 4 + rows x 2: needs the row count. */
    BITNET_PLANES("BitNet-planes", 0) {
        @Override
        public OptionalLong physicalBytes(long n) {
            return OptionalLong.empty();
        }
    },
    /** int8 codes plus one FP32 scale per row: needs the row count. */
    DENSE_I8_ABSMAX("I8-absmax", 0) {
        @Override
        public OptionalLong physicalBytes(long n) {
            return OptionalLong.empty();
        }
    };

    private final String label;
    private final double bitsPerElement;

    PackedEncoding(String label, double bitsPerElement) {
        this.label = label;
        this.bitsPerElement = bitsPerElement;
    }

    @Override
    public String label() {
        return label;
    }

    @Override
    public Optional<BlockSpec> blockSpec() {
        return bitsPerElement > 0 ? Optional.of(new BlockSpec(bitsPerElement)) : Optional.empty();
    }
}
