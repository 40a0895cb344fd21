package dev.placementaudit.core.format;

import java.util.Optional;
import java.util.OptionalLong;

/** TurboQuant polar blocks: a 4-byte norm, 2 bytes per 32 elements of angles, then the packed codes. */
public record TurboQuantPolar(int bits, int block) implements TensorEncoding {
    public TurboQuantPolar {
        TurboQuantRules.checkBits(bits);
        TurboQuantRules.checkBlock(block);
    }

    public long bytesPerBlock() {
        return 4L + (block / 32) * 2L + TurboQuantRules.ceilDiv((long) block * bits, 8);
    }

    @Override
    public String label() {
        return "TurboQuant-Polar-" + bits + "b";
    }

    /** The label omits the block size, which prices the tensor; the wire form keeps it. */
    @Override
    public String spec() {
        return label() + "/" + block;
    }

    @Override
    public OptionalLong physicalBytes(long elementCount) {
        return OptionalLong.of(TensorEncoding.blockBytes(elementCount, block, bytesPerBlock()));
    }

    @Override
    public Optional<BlockSpec> blockSpec() {
        return Optional.of(new BlockSpec(bits));
    }
}
