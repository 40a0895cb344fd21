package dev.placementaudit.core.format;

import java.util.Arrays;

/**
 * The logical element type of a tensor. A quantized weight keeps its logical dtype (FP32) and carries the
 * block layout in its {@link TensorEncoding}; so the dtype alone never says how many bytes a tensor costs.
 */
public enum DType {
    TERNARY("Ternary", 2),
    INT4("Int4", 4),
    INT8("Int8", 8),
    INT16("Int16", 16),
    INT32("Int32", 32),
    INT64("Int64", 64),
    UINT8("UInt8", 8),
    UINT16("UInt16", 16),
    UINT32("UInt32", 32),
    UINT64("UInt64", 64),
    FP16("Float16", 16),
    BF16("BFloat16", 16),
    FP32("Float32", 32),
    FP64("Float64", 64);

    private final String displayName;
    private final int sizeInBits;

    DType(String displayName, int sizeInBits) {
        this.displayName = displayName;
        this.sizeInBits = sizeInBits;
    }

    /** The name SKaiNET prints in formats, e.g. {@code Float32} in {@code Float32/Q4_K}. */
    public String displayName() {
        return displayName;
    }

    /** {@code ceil(bits / 8)}: sub-byte types still cost a whole byte per element when dequantized to (domain Q9). */
    public int sizeInBytes() {
        return (sizeInBits + 7) / 8;
    }

    /** Accepts the constant name ({@code FP32}) or the display name ({@code Float32}). */
    public static DType parse(String text) {
        for (DType type : values()) {
            if (type.name().equals(text) || type.displayName.equals(text)) {
                return type;
            }
        }
        throw new IllegalArgumentException("unknown dtype '" + text + "'; expected one of " + Arrays.toString(values()));
    }
}
