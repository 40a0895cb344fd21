package dev.placementaudit.core.placement;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PlannerProfileTest {

    @ParameterizedTest
    @CsvSource({"261120,HOST_HEAP", "262144,HOST_OFFHEAP", "262143,HOST_HEAP", "0,HOST_HEAP", "67108864,HOST_OFFHEAP"})
    void domainForSplitsAtTheThresholdInclusive(long bytes, MemoryDomain expected) {
        assertThat(PlannerProfile.DESKTOP.domainFor(bytes)).isEqualTo(expected);
    }

    @Test
    void namedProfilesCarrySkainetConstants() {
        assertThat(PlannerProfile.MOBILE_2GB.strict()).isTrue();
        assertThat(PlannerProfile.MOBILE_2GB.weightsMapped()).isTrue();
        assertThat(PlannerProfile.MOBILE_2GB.reserveBytes()).isEqualTo(734_003_200L);
        assertThat(PlannerProfile.EDGE.reserveBytes()).isZero();
        assertThat(PlannerProfile.EDGE.weightsMapped()).isTrue();
        assertThat(PlannerProfile.DESKTOP.weightsMapped()).isFalse();
        assertThat(PlannerProfile.NATIVE.reserveBytes()).isEqualTo(314_572_800L);
        assertThat(PlannerProfile.NAMED).allSatisfy(p -> assertThat(p.offHeapThresholdBytes()).isEqualTo(262_144L));
    }

    @Test
    void looksUpProfilesByNameIncludingStrictVariants() {
        assertThat(PlannerProfile.byName("edge")).isSameAs(PlannerProfile.EDGE);
        PlannerProfile strictDesktop = PlannerProfile.byName("desktop (strict)");
        assertThat(strictDesktop.strict()).isTrue();
        assertThat(strictDesktop.name()).isEqualTo("desktop (strict)");
        assertThatThrownBy(() -> PlannerProfile.byName("laptop")).hasMessageContaining("'laptop'").hasMessageContaining("desktop");
    }

    @Test
    void strictIsIdempotent() {
        assertThat(PlannerProfile.MOBILE_2GB.asStrict()).isSameAs(PlannerProfile.MOBILE_2GB);
        assertThat(PlannerProfile.DESKTOP.asStrict().asStrict().name()).isEqualTo("desktop (strict)");
    }

    @Test
    void budgetSubtractsTheReserveAndNeverGoesNegative() {
        assertThat(PlannerProfile.NATIVE.budget(1_000_000_000L)).isEqualTo(1_000_000_000L - 314_572_800L);
        assertThat(PlannerProfile.NATIVE.budget(1)).isZero();
    }

    @Test
    void forDevicePlansSmallDevicesAsPhones() {
        assertThat(PlannerProfile.forDevice(3_221_225_472L)).isSameAs(PlannerProfile.MOBILE_2GB);
        assertThat(PlannerProfile.forDevice(3_221_225_473L)).isSameAs(PlannerProfile.DESKTOP);
    }

    @Test
    void rejectsANonPositiveThresholdNamingTheProfile() {
        assertThatThrownBy(() -> PlannerProfile.EDGE.withOffHeapThreshold(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("edge").hasMessageContaining("offHeapThresholdBytes");
    }

    @Test
    void byteSizesFormatLikeSkainet() {
        assertThat(ByteSizes.format(589_824)).isEqualTo("576 KB");
        assertThat(ByteSizes.format(262_144)).isEqualTo("256 KB");
        assertThat(ByteSizes.format(1023)).isEqualTo("1023 B");
        assertThat(ByteSizes.format(4_194_304)).isEqualTo("4 MB");
        assertThat(ByteSizes.format(1_073_741_824L)).isEqualTo("1.0 GB");
        assertThat(ByteSizes.format(3_435_973_837L)).isEqualTo("3.2 GB");
    }
}
