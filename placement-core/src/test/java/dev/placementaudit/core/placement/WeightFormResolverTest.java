package dev.placementaudit.core.placement;

import dev.placementaudit.core.format.BlockQuant;
import dev.placementaudit.core.format.DType;
import dev.placementaudit.core.format.Dense;
import dev.placementaudit.core.format.Opaque;
import dev.placementaudit.core.format.TensorEncoding;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class WeightFormResolverTest {

    @ParameterizedTest
    @EnumSource(BlockQuant.class)
    void fedBlockEncodingKeepsStoredInKernelFeedOrderWhenThePipelineCanPermute(BlockQuant stored) {
        WeightForm desktop = WeightFormResolver.resolve(stored, PlannerProfile.DESKTOP, KernelCapabilities.EVERYTHING, true);
        WeightForm mobile = WeightFormResolver.resolve(stored, PlannerProfile.MOBILE_2GB, KernelCapabilities.EVERYTHING, true);

        assertThat(desktop).isEqualTo(new WeightForm(EncodingRequest.KEEP_AS_STORED, WeightByteOrder.KERNEL_FEED,
                WeightShapeOrientation.AS_STORED, WeightResidency.HEAP));
        assertThat(mobile.residency()).isEqualTo(WeightResidency.MAPPED);
        assertThat(mobile.order()).isEqualTo(WeightByteOrder.KERNEL_FEED);
    }

    @ParameterizedTest
    @EnumSource(BlockQuant.class)
    void fedBlockEncodingStaysAsStoredByDefault(BlockQuant stored) {
        assertThat(WeightFormResolver.resolve(stored, PlannerProfile.DESKTOP, KernelCapabilities.EVERYTHING))
                .isEqualTo(WeightForm.AS_STORED_ON_HEAP);
    }

    @ParameterizedTest
    @EnumSource(BlockQuant.class)
    void unfedBlockEncodingIsDequantizedToFp32(BlockQuant stored) {
        WeightForm form = WeightFormResolver.resolve(stored, PlannerProfile.DESKTOP, KernelCapabilities.DENSE_ONLY);

        assertThat(form).isEqualTo(WeightForm.AS_STORED_ON_HEAP.withEncoding(new EncodingRequest.DequantizeTo(DType.FP32)));
    }

    @Test
    void strictProfileRefusesASilentDequantizationNamingTheGrowth() {
        assertThatThrownBy(() -> WeightFormResolver.resolve(BlockQuant.Q4_K, PlannerProfile.MOBILE_2GB, KernelCapabilities.DENSE_ONLY))
                .isInstanceOf(StrictFormRefusedException.class)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Q4_K").hasMessageContaining("strict").hasMessageContaining("8.0\u00d7");
    }

    @Test
    void theGrowthFactorIsTruncatedAsSkainetPrintsIt() {
        // TQ1_0: 32 / 1.625 = 19.69..., which SKaiNET prints "19.6x" (truncated), not "19.7x".
        assertThatThrownBy(() -> WeightFormResolver.resolve(BlockQuant.TQ1_0, PlannerProfile.MOBILE_2GB, KernelCapabilities.DENSE_ONLY))
                .isInstanceOf(StrictFormRefusedException.class).hasMessageContaining("19.6\u00d7");
    }

    @Test
    void strictRefusalOfAnOpaqueEncodingSaysSeveral() {
        TensorEncoding q3k = new Opaque("Q3_K", 7_208_960);

        assertThatThrownBy(() -> WeightFormResolver.resolve(q3k, PlannerProfile.MOBILE_2GB, KernelCapabilities.DENSE_ONLY))
                .isInstanceOfSatisfying(StrictFormRefusedException.class, e -> {
                    assertThat(e.getMessage()).contains("Q3_K").contains("several");
                    assertThat(e.code()).isEqualTo(ReasonCode.FORM_STRICT_REFUSED);
                });
    }

    @Test
    void denseIsPassThroughEvenWithDenseOnlyKernels() {
        WeightForm form = WeightFormResolver.resolve(new Dense(4), PlannerProfile.DESKTOP, KernelCapabilities.DENSE_ONLY);

        assertThat(form).isEqualTo(WeightForm.AS_STORED_ON_HEAP);
        assertThat(form.isPassThrough()).isTrue();
    }

    @Test
    void theProfileAloneDecidesResidency() {
        PlannerProfile mappedDesktop = PlannerProfile.DESKTOP.withWeightsMapped(true);

        assertThat(WeightFormResolver.resolve(new Dense(4), mappedDesktop, KernelCapabilities.EVERYTHING).residency())
                .isEqualTo(WeightResidency.MAPPED);
        assertThat(WeightFormResolver.resolve(BlockQuant.Q6_K, mappedDesktop, KernelCapabilities.EVERYTHING).residency())
                .isEqualTo(WeightResidency.MAPPED);
    }

    @Test
    void kernelsThatDoNotWantFeedOrderKeepStoredOrder() {
        KernelCapabilities feedsAllAsStored = new KernelCapabilities() {
            @Override
            public boolean canFeedMatmul(TensorEncoding encoding) {
                return true;
            }

            @Override
            public boolean wantsKernelFeedOrder(TensorEncoding encoding) {
                return false;
            }
        };

        assertThat(WeightFormResolver.resolve(BlockQuant.Q8_0, PlannerProfile.DESKTOP, feedsAllAsStored, true).order())
                .isEqualTo(WeightByteOrder.AS_STORED);
    }

    @Test
    void edgeDequantizesButStillAsksForAMappingWhichThenCannotHappen() {
        WeightForm form = WeightFormResolver.resolve(BlockQuant.Q4_K, PlannerProfile.EDGE, KernelCapabilities.DENSE_ONLY);
        PlanTensor weight = PlanTensor.of("w", new dev.placementaudit.core.format.Format(DType.FP32, BlockQuant.Q4_K), 1_048_576, form);

        assertThat(form).isEqualTo(WeightForm.AS_STORED_MAPPED.withEncoding(new EncodingRequest.DequantizeTo(DType.FP32)));
        assertThat(AllocationResolver.resolve(weight, PlannerProfile.EDGE, StorageCapabilities.FULL).primaryReason())
                .isEqualTo(ReasonCode.REENCODED_AT_LOAD);
    }

    @Test
    void namedKernelSetFeedsDenseAndTheNamedEncodingsOnly() {
        KernelCapabilities kernels = KernelCapabilities.feeding(java.util.Set.of(BlockQuant.Q4_K));

        assertThat(WeightFormResolver.resolve(BlockQuant.Q4_K, PlannerProfile.DESKTOP, kernels).keepsStoredEncoding()).isTrue();
        assertThat(WeightFormResolver.resolve(BlockQuant.Q6_K, PlannerProfile.DESKTOP, kernels).keepsStoredEncoding()).isFalse();
    }
}
