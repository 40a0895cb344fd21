package dev.placementaudit.core.placement;

import dev.placementaudit.core.format.BlockQuant;
import dev.placementaudit.core.format.DType;
import dev.placementaudit.core.format.Format;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class AllocationResolverTest {
    private static final Format Q4_K = new Format(DType.FP32, BlockQuant.Q4_K);
    private static final PlanTensor W = PlanTensor.of("blk.0.attn_q.weight", Q4_K, 1_048_576, WeightForm.AS_STORED_MAPPED);

    private static PlanTensor denseF32(long elements) {
        return PlanTensor.of("t", Format.dense(DType.FP32), elements, WeightForm.AS_STORED_ON_HEAP);
    }

    @Test
    void exactlyTheThresholdGoesOffHeap() {
        AllocationDecision atThreshold = AllocationResolver.resolve(denseF32(65_536), PlannerProfile.DESKTOP, StorageCapabilities.FULL);
        AllocationDecision oneElementBelow = AllocationResolver.resolve(denseF32(65_535), PlannerProfile.DESKTOP, StorageCapabilities.FULL);

        assertThat(atThreshold.residentBytes()).isEqualTo(262_144);
        assertThat(atThreshold.domain()).isEqualTo(MemoryDomain.HOST_OFFHEAP);
        assertThat(atThreshold.placement()).isEqualTo(ReasonCode.ABOVE_THRESHOLD);
        assertThat(oneElementBelow.domain()).isEqualTo(MemoryDomain.HOST_HEAP);
        assertThat(oneElementBelow.placement()).isEqualTo(ReasonCode.BELOW_THRESHOLD);
    }

    @Test
    void emptyTensorStaysOnTheHeap() {
        AllocationDecision empty = AllocationResolver.resolve(denseF32(0), PlannerProfile.DESKTOP, StorageCapabilities.FULL);

        assertThat(empty.residentBytes()).isZero();
        assertThat(empty.domain()).isEqualTo(MemoryDomain.HOST_HEAP);
    }

    @Test
    void aLowerThresholdMovesATensorOffHeap() {
        PlanTensor bias = denseF32(768);

        assertThat(AllocationResolver.resolve(bias, PlannerProfile.DESKTOP, StorageCapabilities.FULL).domain())
                .isEqualTo(MemoryDomain.HOST_HEAP);
        assertThat(AllocationResolver.resolve(bias, PlannerProfile.DESKTOP.withOffHeapThreshold(3_072), StorageCapabilities.FULL).domain())
                .isEqualTo(MemoryDomain.HOST_OFFHEAP);
    }

    @Test
    void sizeNeverMattersOnceMapped() {
        PlanTensor tiny = PlanTensor.of("tiny", Format.dense(DType.FP32), 1, WeightForm.AS_STORED_MAPPED);

        AllocationDecision decision = AllocationResolver.resolve(tiny, PlannerProfile.EDGE, StorageCapabilities.FULL);

        assertThat(decision.domain()).isEqualTo(MemoryDomain.MMAP_FILE);
        assertThat(decision.placement()).isEqualTo(ReasonCode.MAPPED_OK);
    }

    @Test
    void servabilityIsJudgedOnTheEncodingNotTheDtype() {
        PlanTensor int32 = PlanTensor.of("ids", Format.dense(DType.INT32), 1_000_000, WeightForm.AS_STORED_MAPPED);
        PlanTensor bf16 = PlanTensor.of("emb", Format.dense(DType.BF16), 1_000_000, WeightForm.AS_STORED_MAPPED);

        assertThat(AllocationResolver.resolve(int32, PlannerProfile.EDGE, StorageCapabilities.FULL).domain())
                .isEqualTo(MemoryDomain.MMAP_FILE);
        assertThat(AllocationResolver.resolve(bf16, PlannerProfile.EDGE, StorageCapabilities.FULL).mappingBlockers())
                .containsExactly(ReasonCode.ENCODING_NOT_MAPPABLE);
    }

    @Test
    void keepsEveryBlockerInExplainOrder() {
        PlanTensor requantFeed = W.withForm(WeightForm.AS_STORED_MAPPED
                .withEncoding(new EncodingRequest.RequantizeTo(BlockQuant.Q4_0))
                .withOrder(WeightByteOrder.KERNEL_FEED));
        StorageCapabilities noServable = StorageCapabilities.HEAP_ONLY.withMappedServableEncodings(java.util.Set.of());

        AllocationDecision decision = AllocationResolver.resolve(requantFeed, PlannerProfile.EDGE, noServable);

        assertThat(decision.mappingBlockers()).containsExactly(ReasonCode.PLATFORM_CANNOT_MAP,
                ReasonCode.REENCODED_AT_LOAD, ReasonCode.KERNEL_FEED_COPY, ReasonCode.ENCODING_NOT_MAPPABLE);
        assertThat(decision.primaryReason()).isEqualTo(ReasonCode.PLATFORM_CANNOT_MAP);
        assertThat(decision.placement()).isEqualTo(ReasonCode.NO_OFFHEAP_ON_PLATFORM);
        assertThat(decision.domain()).isEqualTo(MemoryDomain.HOST_HEAP);
    }

    @Test
    void withoutAMappingRequestThereAreNoBlockers() {
        AllocationDecision decision = AllocationResolver.resolve(W.withForm(WeightForm.AS_STORED_ON_HEAP),
                PlannerProfile.DESKTOP, StorageCapabilities.HEAP_ONLY);

        assertThat(decision.mappingRequested()).isFalse();
        assertThat(decision.mappingBlockers()).isEmpty();
        assertThat(decision.primaryReason()).isEqualTo(ReasonCode.NO_OFFHEAP_ON_PLATFORM);
    }

    @Test
    void explainsAMappedWeightByTheFilesBytes() {
        String text = AllocationResolver.explain(W, PlannerProfile.MOBILE_2GB, StorageCapabilities.FULL);

        assertThat(text).startsWith("blk.0.attn_q.weight: MMAP_FILE/MODEL \u2014 ").contains("file's bytes");
    }

    @Test
    void explainsEachMappingBlocker() {
        assertThat(AllocationResolver.explain(W, PlannerProfile.MOBILE_2GB, StorageCapabilities.NO_MAPPING))
                .startsWith("blk.0.attn_q.weight: HOST_OFFHEAP/MODEL \u2014 ").contains("cannot map");
        assertThat(AllocationResolver.explain(W.withForm(WeightForm.AS_STORED_MAPPED.withEncoding(
                new EncodingRequest.DequantizeTo(DType.FP32))), PlannerProfile.MOBILE_2GB, StorageCapabilities.FULL))
                .contains("re-encoded at load").contains("Float32/Q4_K -> Float32/Dense(4B)");
        assertThat(AllocationResolver.explain(W.withForm(WeightForm.AS_STORED_MAPPED.withOrder(WeightByteOrder.KERNEL_FEED)),
                PlannerProfile.MOBILE_2GB, StorageCapabilities.FULL)).contains("kernel-feed order is a load-time copy");
        PlanTensor tq2 = PlanTensor.of("w", new Format(DType.FP32, BlockQuant.TQ2_0), 419_430_400L, WeightForm.AS_STORED_MAPPED);
        assertThat(AllocationResolver.explain(tq2, PlannerProfile.MOBILE_2GB, StorageCapabilities.FULL))
                .contains("no loader/kernel serves TQ2_0");
    }

    @Test
    void explainsTheThresholdWithFormattedSizes() {
        String text = AllocationResolver.explain(W.withForm(WeightForm.AS_STORED_ON_HEAP), PlannerProfile.DESKTOP, StorageCapabilities.FULL);

        assertThat(text).isEqualTo("blk.0.attn_q.weight: HOST_OFFHEAP/MODEL \u2014 resident 576 KB vs off-heap threshold 256 KB: "
                + "at or above, kept off the managed heap");
    }

    @Test
    void saysNoOffHeapWheneverThePlatformLacksItEvenBelowThreshold() {
        String small = AllocationResolver.explain(denseF32(768), PlannerProfile.DESKTOP, StorageCapabilities.HEAP_ONLY);
        String large = AllocationResolver.explain(W.withForm(WeightForm.AS_STORED_ON_HEAP), PlannerProfile.DESKTOP, StorageCapabilities.HEAP_ONLY);

        assertThat(small).contains("resident 3 KB").endsWith("(no off-heap on this platform)");
        assertThat(large).contains("HOST_HEAP/MODEL").endsWith("(no off-heap on this platform)");
        assertThat(AllocationResolver.explain(denseF32(768), PlannerProfile.DESKTOP, StorageCapabilities.FULL))
                .doesNotContain("no off-heap");
    }

    @Test
    void smallTransientGoesToTheHeapForTheForwardPass() {
        AllocationDecision decision = AllocationResolver.resolveTransient("scratch", Format.dense(DType.FP32), 1_024,
                PlannerProfile.DESKTOP, StorageCapabilities.FULL);

        assertThat(decision.residentBytes()).isEqualTo(4_096);
        assertThat(decision.domain()).isEqualTo(MemoryDomain.HOST_HEAP);
        assertThat(decision.scope()).isEqualTo(ScopeKind.FORWARD);
        assertThat(decision.spec().mutable()).isTrue();
        assertThat(decision.placement()).isEqualTo(ReasonCode.BELOW_THRESHOLD);
    }

    @Test
    void largeTransientGoesOffHeapInTheCallersScope() {
        AllocationDecision decision = AllocationResolver.resolveTransient("act", Format.dense(DType.FP32), 1_048_576,
                PlannerProfile.DESKTOP, StorageCapabilities.FULL, ScopeKind.AMBIENT);

        assertThat(decision.residentBytes()).isEqualTo(4_194_304);
        assertThat(decision.domain()).isEqualTo(MemoryDomain.HOST_OFFHEAP);
        assertThat(decision.scope()).isEqualTo(ScopeKind.AMBIENT);
        assertThat(decision.spec().mutable()).isTrue();
    }

    @Test
    void transientIsNeverMappedAndFallsBackWithoutOffHeap() {
        AllocationDecision decision = AllocationResolver.resolveTransient("act", Format.dense(DType.FP32), 1_048_576,
                PlannerProfile.DESKTOP, StorageCapabilities.HEAP_ONLY);

        assertThat(decision.domain()).isEqualTo(MemoryDomain.HOST_HEAP);
        assertThat(decision.placement()).isEqualTo(ReasonCode.NO_OFFHEAP_ON_PLATFORM);
    }

    @Test
    void transientThatCannotPriceItselfUsesTheDtypeWidth() {
        Format planes = new Format(DType.INT8, dev.placementaudit.core.format.PackedEncoding.BITNET_PLANES);

        AllocationDecision decision = AllocationResolver.resolveTransient("p", planes, 1_000, PlannerProfile.DESKTOP, StorageCapabilities.FULL);

        assertThat(decision.residentBytes()).isEqualTo(1_000);
    }

    @Test
    void aDecisionRefusesAReasonThatContradictsItsDomain() {
        AllocationSpec heap = new AllocationSpec(Q4_K, 1, MemoryDomain.HOST_HEAP, ScopeKind.MODEL, false, 64);

        assertThatThrownBy(() -> new AllocationDecision("t", Q4_K, heap, 1, false, java.util.List.of(),
                ReasonCode.ABOVE_THRESHOLD, 262_144, true))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ABOVE_THRESHOLD");
    }
}
