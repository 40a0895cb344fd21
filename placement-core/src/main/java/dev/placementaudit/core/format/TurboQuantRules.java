package dev.placementaudit.core.format;

import java.util.Set;

/** The parameter rules both TurboQuant encodings share. */
final class TurboQuantRules {
    private static final Set<Integer> BITS = Set.of(2, 3, 4, 8);

    private TurboQuantRules() {
    }

    static void checkBits(int bits) {
        if (!BITS.contains(bits)) {
            throw new IllegalArgumentException("TurboQuant bits must be one of 2, 3, 4, 8, was " + bits);
        }
    }

    static void checkBlock(int block) {
        if (block <= 0 || Integer.bitCount(block) != 1) {
            throw new IllegalArgumentException("TurboQuant block must be a power of two, was " + block);
        }
    }

    static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }
}
