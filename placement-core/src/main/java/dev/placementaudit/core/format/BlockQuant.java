package dev.placementaudit.core.format;

import java.util.Optional;
import java.util.OptionalLong;

/** The ggml block quantizations SKaiNET models as encodings of their own; every other ggml type is {@link Opaque}. */
public enum BlockQuant implements TensorEncoding {
    Q4_0(32, 18, 4.0),
    Q5_0(32, 22, 5.0),
    Q5_1(32, 24, 5.0),
    Q8_0(32, 34, 8.0),
    Q4_K(256, 144, 4.0),
    Q5_K(256, 176, 5.0),
    Q6_K(256, 210, 6.0),
    TQ1_0(256, 54, 1.625),
    TQ2_0(256, 66, 2.0);

    private final int blockSize;
    private final int bytesPerBlock;
    private final BlockSpec blockSpec;

    BlockQuant(int blockSize, int bytesPerBlock, double bitsPerElement) {
        this.blockSize = blockSize;
        this.bytesPerBlock = bytesPerBlock;
        this.blockSpec = new BlockSpec(bitsPerElement);
    }

    public int blockSize() {
        return blockSize;
    }

    public int bytesPerBlock() {
        return bytesPerBlock;
    }

    @Override
    public String label() {
        return name();
    }

    @Override
    public OptionalLong physicalBytes(long elementCount) {
        return OptionalLong.of(TensorEncoding.blockBytes(elementCount, blockSize, bytesPerBlock));
    }

    @Override
    public Optional<BlockSpec> blockSpec() {
        return Optional.of(blockSpec);
    }
}
