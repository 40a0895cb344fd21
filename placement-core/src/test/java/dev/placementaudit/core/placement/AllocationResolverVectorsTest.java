package dev.placementaudit.core.placement;

import dev.placementaudit.core.format.BlockQuant;
import dev.placementaudit.core.format.DType;
import dev.placementaudit.core.format.Format;
import dev.placementaudit.core.format.GgmlType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.stream.Stream;

import static dev.placementaudit.core.placement.MemoryDomain.HOST_HEAP;
import static dev.placementaudit.core.placement.MemoryDomain.HOST_OFFHEAP;
import static dev.placementaudit.core.placement.MemoryDomain.MMAP_FILE;
import static dev.placementaudit.core.placement.ReasonCode.ABOVE_THRESHOLD;
import static dev.placementaudit.core.placement.ReasonCode.BELOW_THRESHOLD;
import static dev.placementaudit.core.placement.ReasonCode.ENCODING_NOT_MAPPABLE;
import static dev.placementaudit.core.placement.ReasonCode.KERNEL_FEED_COPY;
import static dev.placementaudit.core.placement.ReasonCode.MAPPED_OK;
import static dev.placementaudit.core.placement.ReasonCode.NO_OFFHEAP_ON_PLATFORM;
import static dev.placementaudit.core.placement.ReasonCode.PLATFORM_CANNOT_MAP;
import static dev.placementaudit.core.placement.ReasonCode.REENCODED_AT_LOAD;
import static org.assertj.core.api.Assertions.assertThat;

/** The placement vectors of domain.md section 5, one row each, asserted on every field the audit records. */
class AllocationResolverVectorsTest {
    private static final Format Q4_K = new Format(DType.FP32, BlockQuant.Q4_K);
    private static final Format F32 = Format.dense(DType.FP32);
    private static final PlanTensor W = PlanTensor.of("blk.0.attn_q.weight", Q4_K, 1_048_576, WeightForm.AS_STORED_ON_HEAP);
    private static final WeightForm MAPPED = WeightForm.AS_STORED_MAPPED;
    private static final StorageCapabilities FULL = StorageCapabilities.FULL;
    private static final StorageCapabilities NOMAP = StorageCapabilities.NO_MAPPING;
    private static final StorageCapabilities HEAP_ONLY = StorageCapabilities.HEAP_ONLY;

    record Vector(int row, PlanTensor tensor, PlannerProfile profile, StorageCapabilities platform, long residentBytes,
                  MemoryDomain domain, String residentFormat, List<ReasonCode> blockers, ReasonCode placement) {
        @Override
        public String toString() {
            return "row " + row + ": " + tensor.name() + " " + profile.name();
        }
    }

    static Stream<Vector> vectors() {
        PlanTensor dequantMapped = W.withForm(MAPPED.withEncoding(new EncodingRequest.DequantizeTo(DType.FP32)));
        PlanTensor kernelFeedMapped = W.withForm(MAPPED.withOrder(WeightByteOrder.KERNEL_FEED));
        PlanTensor bias = PlanTensor.of("blk.0.attn_q.bias", F32, 768, WeightForm.AS_STORED_ON_HEAP);
        // Upstream's MappedBudgetPlanTest gives this tensor a round 100 MiB file size rather than TQ2_0's own price.
        PlanTensor tq2 = new PlanTensor("w", new Format(DType.FP32, BlockQuant.TQ2_0), 419_430_400L, 104_857_600L, MAPPED);
        PlanTensor q8 = PlanTensor.of("q8", new Format(DType.FP32, BlockQuant.Q8_0), 1_048_576, MAPPED);
        PlanTensor f16AtThreshold = PlanTensor.of("f16", Format.dense(DType.FP16), 131_072, MAPPED);
        PlanTensor f32BelowThreshold = PlanTensor.of("f32.small", F32, 65_535, MAPPED);
        PlanTensor f32AtThreshold = PlanTensor.of("f32.edge", F32, 65_536, MAPPED);
        PlanTensor dequantHeap = W.withForm(WeightForm.AS_STORED_ON_HEAP.withEncoding(new EncodingRequest.DequantizeTo(DType.FP32)));
        PlanTensor requantMapped = PlanTensor.of("f32.big", F32, 1_048_576,
                MAPPED.withEncoding(new EncodingRequest.RequantizeTo(BlockQuant.Q4_0)));
        long q3Bytes = GgmlType.Q3_K.bytesFor(4096L * 4096L);
        PlanTensor q3k = new PlanTensor("blk.0.ffn_down.weight", GgmlType.Q3_K.toFormat(q3Bytes), 4096L * 4096L, q3Bytes, MAPPED);
        PlanTensor kernelFeedHeap = W.withForm(WeightForm.AS_STORED_ON_HEAP.withOrder(WeightByteOrder.KERNEL_FEED));
        StorageCapabilities full1189 = FULL.withMappedServableEncodings(StorageCapabilities.MAPPED_SERVABLE_1189);

        return Stream.of(
                new Vector(1, W.withForm(MAPPED), PlannerProfile.MOBILE_2GB, FULL, 589_824, MMAP_FILE, "Float32/Q4_K", List.of(), MAPPED_OK),
                new Vector(2, W.withForm(MAPPED), PlannerProfile.MOBILE_2GB, NOMAP, 589_824, HOST_OFFHEAP, "Float32/Q4_K", List.of(PLATFORM_CANNOT_MAP), ABOVE_THRESHOLD),
                new Vector(3, W.withForm(MAPPED), PlannerProfile.MOBILE_2GB, HEAP_ONLY, 589_824, HOST_HEAP, "Float32/Q4_K", List.of(PLATFORM_CANNOT_MAP), NO_OFFHEAP_ON_PLATFORM),
                new Vector(4, dequantMapped, PlannerProfile.MOBILE_2GB, FULL, 4_194_304, HOST_OFFHEAP, "Float32/Dense(4B)", List.of(REENCODED_AT_LOAD), ABOVE_THRESHOLD),
                new Vector(5, kernelFeedMapped, PlannerProfile.MOBILE_2GB, FULL, 589_824, HOST_OFFHEAP, "Float32/Q4_K", List.of(KERNEL_FEED_COPY), ABOVE_THRESHOLD),
                new Vector(6, bias, PlannerProfile.DESKTOP, FULL, 3_072, HOST_HEAP, "Float32/Dense(4B)", List.of(), BELOW_THRESHOLD),
                new Vector(7, W, PlannerProfile.DESKTOP, FULL, 589_824, HOST_OFFHEAP, "Float32/Q4_K", List.of(), ABOVE_THRESHOLD),
                new Vector(10, tq2, PlannerProfile.MOBILE_2GB, FULL, 104_857_600, HOST_OFFHEAP, "Float32/TQ2_0", List.of(ENCODING_NOT_MAPPABLE), ABOVE_THRESHOLD),
                new Vector(11, q8, PlannerProfile.EDGE, FULL, 1_114_112, MMAP_FILE, "Float32/Q8_0", List.of(), MAPPED_OK),
                new Vector(12, q8, PlannerProfile.EDGE, full1189, 1_114_112, HOST_OFFHEAP, "Float32/Q8_0", List.of(ENCODING_NOT_MAPPABLE), ABOVE_THRESHOLD),
                new Vector(13, f16AtThreshold, PlannerProfile.MOBILE_2GB, FULL, 262_144, HOST_OFFHEAP, "Float16/Dense(2B)", List.of(ENCODING_NOT_MAPPABLE), ABOVE_THRESHOLD),
                new Vector(14, f32BelowThreshold, PlannerProfile.MOBILE_2GB, NOMAP, 262_140, HOST_HEAP, "Float32/Dense(4B)", List.of(PLATFORM_CANNOT_MAP), BELOW_THRESHOLD),
                new Vector(15, f32AtThreshold, PlannerProfile.DESKTOP, FULL, 262_144, MMAP_FILE, "Float32/Dense(4B)", List.of(), MAPPED_OK),
                new Vector(16, dequantHeap, PlannerProfile.DESKTOP, HEAP_ONLY, 4_194_304, HOST_HEAP, "Float32/Dense(4B)", List.of(), NO_OFFHEAP_ON_PLATFORM),
                new Vector(17, requantMapped, PlannerProfile.NATIVE, FULL, 589_824, HOST_OFFHEAP, "Float32/Q4_0", List.of(REENCODED_AT_LOAD), ABOVE_THRESHOLD),
                new Vector(18, q3k, PlannerProfile.EDGE, FULL, 7_208_960, HOST_OFFHEAP, "Float32/Q3_K", List.of(ENCODING_NOT_MAPPABLE), ABOVE_THRESHOLD),
                new Vector(19, W, PlannerProfile.DESKTOP, NOMAP, 589_824, HOST_OFFHEAP, "Float32/Q4_K", List.of(), ABOVE_THRESHOLD),
                new Vector(20, kernelFeedHeap, PlannerProfile.DESKTOP, FULL, 589_824, HOST_OFFHEAP, "Float32/Q4_K", List.of(), ABOVE_THRESHOLD));
    }

    @ParameterizedTest
    @MethodSource("vectors")
    void resolvesEachDomainVector(Vector v) {
        AllocationDecision decision = AllocationResolver.resolve(v.tensor(), v.profile(), v.platform());

        assertThat(decision.residentBytes()).isEqualTo(v.residentBytes());
        assertThat(decision.domain()).isEqualTo(v.domain());
        assertThat(decision.residentFormat()).hasToString(v.residentFormat());
        assertThat(decision.mappingBlockers()).containsExactlyElementsOf(v.blockers());
        assertThat(decision.placement()).isEqualTo(v.placement());
        assertThat(decision.scope()).isEqualTo(ScopeKind.MODEL);
        assertThat(decision.spec().mutable()).isFalse();
        assertThat(decision.spec().alignment()).isEqualTo(64);
        assertThat(decision.spec().elementCount()).isEqualTo(v.tensor().elementCount());
        assertThat(AllocationResolver.servesFromMapping(v.tensor(), v.platform())).isEqualTo(v.domain() == MMAP_FILE);
    }

    @ParameterizedTest
    @MethodSource("vectors")
    void primaryReasonIsTheFirstBlockerElseThePlacement(Vector v) {
        AllocationDecision decision = AllocationResolver.resolve(v.tensor(), v.profile(), v.platform());

        ReasonCode expected = v.blockers().isEmpty() ? v.placement() : v.blockers().get(0);
        assertThat(decision.primaryReason()).isEqualTo(expected);
    }

}
