package dev.placementaudit.core.placement;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Byte counts as SKaiNET's MemoryPlans.formatBytes prints them, ties included. */
class ByteSizesTest {
    private static final long GIB = 1L << 30;

    @Test
    void gigabytesRoundHalfToEvenAsSkainetDoes() {
        assertThat(ByteSizes.format(GIB + GIB / 4)).isEqualTo("1.2 GB");
        assertThat(ByteSizes.format(2 * GIB + GIB / 4)).isEqualTo("2.2 GB");
        assertThat(ByteSizes.format(GIB + 3 * GIB / 4)).isEqualTo("1.8 GB");
        assertThat(ByteSizes.format(-(GIB + GIB / 4))).isEqualTo("-1.2 GB");
        assertThat(ByteSizes.format(GIB + GIB / 4 + 1)).as("just past the tie").isEqualTo("1.3 GB");
        assertThat(ByteSizes.format(GIB)).isEqualTo("1.0 GB");
    }

    @Test
    void megabytesAndKilobytesAreWholeAndTruncated() {
        assertThat(ByteSizes.format(589_824)).isEqualTo("576 KB");
        assertThat(ByteSizes.format(262_144)).isEqualTo("256 KB");
        assertThat(ByteSizes.format((1L << 20) * 3 / 2)).isEqualTo("1 MB");
        assertThat(ByteSizes.format(1023)).isEqualTo("1023 B");
    }
}
