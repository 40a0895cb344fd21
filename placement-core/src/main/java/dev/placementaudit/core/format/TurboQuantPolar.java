package dev.placementaudit.core.format;

import java.util.Optional;

/** TurboQuant polar blocks: a 4-byte norm, 2 bytes per 32 elements of angles, then the packed codes. */
public record TurboQuantPolar(int bits, int block) implements TurboQuant {
    public TurboQuantPolar {
        TurboQuantRules.checkBits(bits);
        TurboQuantRules.checkBlock(block);
    }

    @Override
    public long bytesPerBlock() {
        return 4L + (block / 32) * 2L + TurboQuantRules.ceilDiv((long) block * bits, 8);
    }

    @Override
    public String label() {
        return "TurboQuant-Polar-" + bits + "b";
    }

    @Override
    public Optional<BlockSpec> blockSpec() {
        return Optional.of(new BlockSpec(bits));
    }
}
