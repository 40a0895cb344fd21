package dev.placementaudit.core.format;

import java.util.Optional;

/** TurboQuant polar blocks plus a QJL residual of {@code residual} bits per element. */
public record TurboQuantPolarQjl(int bits, int residual, int block) implements TurboQuant {
    public TurboQuantPolarQjl {
        TurboQuantRules.checkBits(bits);
        if (residual < 1 || residual > 4) {
            throw new IllegalArgumentException("TurboQuant residual bits must be in 1..4, was " + residual);
        }
        TurboQuantRules.checkBlock(block);
    }

    @Override
    public long bytesPerBlock() {
        return new TurboQuantPolar(bits, block).bytesPerBlock() + TurboQuantRules.ceilDiv((long) block * residual, 8);
    }

    @Override
    public String label() {
        return "TurboQuant-PolarQjl-" + bits + "b+" + residual + "r";
    }

    @Override
    public Optional<BlockSpec> blockSpec() {
        return Optional.of(new BlockSpec(bits + residual));
    }
}
