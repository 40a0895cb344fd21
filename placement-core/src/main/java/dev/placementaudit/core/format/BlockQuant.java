package dev.placementaudit.core.format;

import java.util.Optional;
import java.util.OptionalLong;

/** The ggml block quantizations SKaiNET models as encodings of their own; every other ggml type is {@link Opaque}. */
public enum BlockQuant implements TensorEncoding {
    Q4_0(GgmlType.Q4_0, 4.0),
    Q5_0(GgmlType.Q5_0, 5.0),
    Q5_1(GgmlType.Q5_1, 5.0),
    Q8_0(GgmlType.Q8_0, 8.0),
    Q4_K(GgmlType.Q4_K, 4.0),
    Q5_K(GgmlType.Q5_K, 5.0),
    Q6_K(GgmlType.Q6_K, 6.0),
    TQ1_0(GgmlType.TQ1_0, 1.625),
    TQ2_0(GgmlType.TQ2_0, 2.0);

    /** The ggml type these blocks are stored as: its block size and bytes per block, from the one table of them. */
    private final GgmlType stored;
    private final BlockSpec blockSpec;

    BlockQuant(GgmlType stored, double bitsPerElement) {
        this.stored = stored;
        this.blockSpec = new BlockSpec(bitsPerElement);
    }

    @Override
    public String label() {
        return name();
    }

    @Override
    public OptionalLong physicalBytes(long elementCount) {
        return OptionalLong.of(TensorEncoding.blockBytes(elementCount, stored.blockSize(), stored.bytesPerBlock()));
    }

    @Override
    public Optional<BlockSpec> blockSpec() {
        return Optional.of(blockSpec);
    }
}
