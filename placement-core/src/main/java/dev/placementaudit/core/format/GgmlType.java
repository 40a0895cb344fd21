package dev.placementaudit.core.format;

import java.util.Optional;

/**
 * ggml tensor type ids as they appear in GGUF tensor infos (ggml docs/gguf.md, gguf-py GGML_QUANT_SIZES), each with
 * its block size and bytes per block, and the SKaiNET mapping to a {@link Format} (domain 2.1).
 */
public enum GgmlType {
    F32(0, 1, 4), F16(1, 1, 2), Q4_0(2, 32, 18), Q4_1(3, 32, 20), Q5_0(6, 32, 22), Q5_1(7, 32, 24),
    Q8_0(8, 32, 34), Q8_1(9, 32, 36), Q2_K(10, 256, 84), Q3_K(11, 256, 110), Q4_K(12, 256, 144),
    Q5_K(13, 256, 176), Q6_K(14, 256, 210), Q8_K(15, 256, 292), IQ2_XXS(16, 256, 66), IQ2_XS(17, 256, 74),
    IQ3_XXS(18, 256, 98), IQ1_S(19, 256, 50), IQ4_NL(20, 32, 18), IQ3_S(21, 256, 110), IQ2_S(22, 256, 82),
    IQ4_XS(23, 256, 136), I8(24, 1, 1), I16(25, 1, 2), I32(26, 1, 4), I64(27, 1, 8), F64(28, 1, 8),
    IQ1_M(29, 256, 56), BF16(30, 1, 2), TQ1_0(34, 256, 54), TQ2_0(35, 256, 66),
    /** BitNet.cpp's I2_S: four elements a byte; its files add a 32-byte scale trailer that the gap to the next tensor covers. */
    I2_S(36, 4, 1),
    MXFP4(39, 32, 17);

    private final int id;
    private final Blocks blocks;

    GgmlType(int id, int blockSize, int bytesPerBlock) {
        this.id = id;
        this.blocks = new Blocks(blockSize, bytesPerBlock);
    }

    /** The type's number in a GGUF tensor info. */
    public int id() {
        return id;
    }

    /** The type a GGUF tensor info names by its number; empty for a number this table does not know. */
    public static Optional<GgmlType> byId(long id) {
        for (GgmlType type : values()) {
            if (type.id == id) {
                return Optional.of(type);
            }
        }
        return Optional.empty();
    }

    /** The type of this name ({@code Q4_0}, {@code F16}); empty for a name this table does not know. */
    public static Optional<GgmlType> byName(String name) {
        for (GgmlType type : values()) {
            if (type.name().equals(name)) {
                return Optional.of(type);
            }
        }
        return Optional.empty();
    }

    /** Elements a block holds: 1 for a dense type. */
    public int blockSize() {
        return blocks.elements();
    }

    /** Bytes a block takes in the file. */
    public int bytesPerBlock() {
        return blocks.bytes();
    }

    /** {@code (n / blockSize) * bytesPerBlock}, floor as ggml does; valid files have whole blocks per row. */
    public long bytesFor(long elementCount) {
        return Math.multiplyExact(elementCount / blocks.elements(), (long) blocks.bytes());
    }

    /** True when {@code elementCount} fills whole blocks; a partial block means a malformed tensor. */
    public boolean fillsWholeBlocks(long elementCount) {
        return elementCount % blocks.elements() == 0;
    }

    /**
     * The SKaiNET format for this type: dense types keep their dtype, the nine modelled quantizations become
     * FP32 with their encoding, everything else FP32 with an {@link Opaque} encoding priced by the file.
     */
    public Format toFormat(long fileBytes) {
        return switch (this) {
            case F32 -> Format.dense(DType.FP32);
            case F16 -> Format.dense(DType.FP16);
            case BF16 -> Format.dense(DType.BF16);
            case F64 -> Format.dense(DType.FP64);
            case I8 -> Format.dense(DType.INT8);
            case I16 -> Format.dense(DType.INT16);
            case I32 -> Format.dense(DType.INT32);
            case I64 -> Format.dense(DType.INT64);
            case Q4_0 -> new Format(DType.FP32, BlockQuant.Q4_0);
            case Q5_0 -> new Format(DType.FP32, BlockQuant.Q5_0);
            case Q5_1 -> new Format(DType.FP32, BlockQuant.Q5_1);
            case Q8_0 -> new Format(DType.FP32, BlockQuant.Q8_0);
            case Q4_K -> new Format(DType.FP32, BlockQuant.Q4_K);
            case Q5_K -> new Format(DType.FP32, BlockQuant.Q5_K);
            case Q6_K -> new Format(DType.FP32, BlockQuant.Q6_K);
            case TQ1_0 -> new Format(DType.FP32, BlockQuant.TQ1_0);
            case TQ2_0 -> new Format(DType.FP32, BlockQuant.TQ2_0);
            default -> new Format(DType.FP32, new Opaque(name(), fileBytes));
        };
    }

    /** A type's storage unit: {@code elements} elements in {@code bytes} bytes (ggml's type traits, blck_size and type_size). */
    private record Blocks(int elements, int bytes) {
    }
}
