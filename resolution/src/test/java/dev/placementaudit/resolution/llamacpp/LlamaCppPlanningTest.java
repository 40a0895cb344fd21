package dev.placementaudit.resolution.llamacpp;

import dev.placementaudit.core.format.GgmlType;
import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.MemoryDomain;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ReasonCode;
import dev.placementaudit.events.RuntimeDecision;
import dev.placementaudit.events.RuntimeDomain;
import dev.placementaudit.events.RuntimeIdentity;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.resolution.Provenance;
import dev.placementaudit.resolution.ResolvedLoad;
import dev.placementaudit.testkit.SampleEvents;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A load that names llama.cpp as its runtime is planned by llama.cpp's rules, not SKaiNET's: what the worker decides for
 * it, tensor by tensor, with the policy's own reasons; a weight llama.cpp's log placed otherwise is a divergence.
 */
class LlamaCppPlanningTest {
    private static final Instant AT = Instant.parse("2026-12-07T08:00:00Z");
    private final LoadResolution resolution = new LoadResolution("0.1.0/skainet-1192");
    private final LoadValidator validator = new LoadValidator(1_000);

    /** A tiny llama's weights: the embedding (read by row), one attention matrix, one norm, the output matrix. */
    private static List<TensorInfo> tensors(GgmlType matrices) {
        List<TensorInfo> tensors = new ArrayList<>();
        long offset = 4096;
        Object[][] weights = {{"token_embd.weight", matrices, new long[]{256, 1024}}, {"blk.0.attn_q.weight", matrices, new long[]{256, 256}},
                {"blk.0.attn_norm.weight", GgmlType.F32, new long[]{256}}, {"output.weight", matrices, new long[]{256, 1024}}};
        for (Object[] w : weights) {
            GgmlType type = (GgmlType) w[1];
            long[] dims = (long[]) w[2];
            long elements = 1;
            for (long d : dims) {
                elements *= d;
            }
            long bytes = type.bytesFor(elements);
            var format = type.toFormat(bytes);
            tensors.add(TensorInfo.newBuilder().setName((String) w[0]).setDtype(format.dtype().name()).setEncoding(format.encoding().spec())
                    .setShape(java.util.Arrays.stream(dims).boxed().toList()).setElementCount(elements).setStoredBytes(bytes).setFileOffset(offset)
                    .setForm(null).build());
            offset += (bytes + 31) / 32 * 32;
        }
        return tensors;
    }

    private static ModelLoaded llamaLoad(GgmlType matrices, boolean mmap, String... cpu) {
        ModelLoaded base = SampleEvents.load("llama-1", "r1", tensors(matrices));
        return ModelLoaded.newBuilder(base)
                .setProfile(dev.placementaudit.events.ProfileSettings.newBuilder(base.getProfile()).setName(mmap ? "llama.cpp" : "llama.cpp-no-mmap")
                        .setOffHeapThresholdBytes(1).setWeightsMapped(mmap).build())
                .setRuntime(RuntimeIdentity.newBuilder().setName("llama.cpp").setBuild("b4916").setCpuFeatures(List.of(cpu)).setMmap(mmap).build())
                .build();
    }

    private ResolvedLoad resolve(ModelLoaded load) {
        return resolution.resolve(load, validator, new Provenance("model-loads", 0, 7), AT);
    }

    @Test
    void q4_0MatricesAreRepackedOffTheHeapOnAvx2AndTheEmbeddingAndNormStayInTheFilesPages() {
        List<AllocationDecided> decisions = resolve(llamaLoad(GgmlType.Q4_0, true, "AVX2", "AARCH64_REPACK")).decisions();

        Map<String, AllocationDecided> byName = new java.util.HashMap<>();
        decisions.forEach(d -> byName.put(d.getTensorName(), d));
        for (String repacked : List.of("blk.0.attn_q.weight", "output.weight")) {
            AllocationDecided d = byName.get(repacked);
            assertThat(d.getDomain()).as(repacked).isEqualTo(MemoryDomain.HOST_OFFHEAP);
            assertThat(d.getReasonCode()).isEqualTo(ReasonCode.KERNEL_FEED_COPY);
            assertThat(d.getPlacementReason()).isEqualTo(ReasonCode.ABOVE_THRESHOLD);
            assertThat(d.getReason()).contains("llama.cpp b4916 on avx2", "repacked as q4_0_8x8", "CPU_AARCH64");
        }
        assertThat(byName.get("token_embd.weight").getDomain()).isEqualTo(MemoryDomain.MMAP_FILE);
        assertThat(byName.get("token_embd.weight").getReason()).contains("read by row (get_rows)", "kept in the file's pages");
        assertThat(byName.get("blk.0.attn_norm.weight").getDomain()).isEqualTo(MemoryDomain.MMAP_FILE);
        assertThat(byName.get("blk.0.attn_norm.weight").getReasonCode()).isEqualTo(ReasonCode.MAPPED_OK);
    }

    @Test
    void q8_0StaysMappedOnThisBuildAndMmapOffCopiesEveryWeightWithNoMappingAsked() {
        assertThat(resolve(llamaLoad(GgmlType.Q8_0, true, "AVX2", "AARCH64_REPACK")).decisions())
                .allSatisfy(d -> assertThat(d.getDomain()).isEqualTo(MemoryDomain.MMAP_FILE));

        List<AllocationDecided> copied = resolve(llamaLoad(GgmlType.Q8_0, false, "AVX2", "AARCH64_REPACK")).decisions();
        assertThat(copied).allSatisfy(d -> {
            assertThat(d.getDomain()).isEqualTo(MemoryDomain.HOST_OFFHEAP);
            assertThat(d.getMappingRequested()).isFalse();
            assertThat(d.getMappingBlockers()).isEmpty();
            assertThat(d.getReason()).contains("copied (mmap off)");
        });
    }

    @Test
    void theSameTensorsUnderSkainetOrAnotherCpuAreOtherRulesWithAnotherDigest() {
        ModelLoaded llama = llamaLoad(GgmlType.Q4_0, true, "AVX2", "AARCH64_REPACK");
        ModelLoaded skainet = ModelLoaded.newBuilder(llama).setRuntime(null).build();
        ModelLoaded arm = llamaLoad(GgmlType.Q4_0, true, "NEON", "DOTPROD", "MATMUL_INT8", "AARCH64_REPACK");

        AllocationDecided onAvx2 = resolve(llama).decisions().get(1);
        AllocationDecided bySkainet = resolve(skainet).decisions().get(1);
        AllocationDecided onArm = resolve(arm).decisions().get(1);

        assertThat(bySkainet.getReason()).doesNotContain("llama.cpp");
        assertThat(onArm.getReason()).contains("llama.cpp b4916 on arm-i8mm", "q4_0_4x8");
        assertThat(List.of(onAvx2.getPolicyDigest(), bySkainet.getPolicyDigest(), onArm.getPolicyDigest())).doesNotHaveDuplicates();
        // The layout remembered for the first load is not handed to the others: each is resolved under its own rules again.
        assertThat(resolve(llama).decisions().get(1).getReason()).isEqualTo(onAvx2.getReason());
    }

    @Test
    void aWeightLlamaCppsLogPlacedOtherwiseThanThePolicyIsADivergenceWithBoth() {
        ModelLoaded load = llamaLoad(GgmlType.Q4_0, true, "AVX2", "AARCH64_REPACK");
        List<TensorInfo> reported = new ArrayList<>();
        for (TensorInfo t : load.getTensors()) {
            // The log names no repack of output.weight: llama.cpp kept it in the file's pages.
            boolean repacked = t.getName().startsWith("blk.0.attn_q");
            reported.add(TensorInfo.newBuilder(t).setRuntime(RuntimeDecision.newBuilder()
                    .setDomain(repacked ? RuntimeDomain.HOST_OFFHEAP : RuntimeDomain.MMAP_FILE).setResidentBytes(t.getStoredBytes())
                    .setReason(repacked ? "CPU_AARCH64: repack with q4_0_8x8" : "CPU_Mapped").build()).build());
        }

        LoadResolved summary = resolve(ModelLoaded.newBuilder(load).setTensors(reported).build()).summary();

        assertThat(summary.getRuntimeReportedTensors()).isEqualTo(4);
        assertThat(summary.getDivergences()).singleElement().satisfies(d -> {
            assertThat(d.getTensorName()).isEqualTo("output.weight");
            assertThat(d.getRuntimeDomain()).isEqualTo("MMAP_FILE");
            assertThat(d.getReferenceDomain()).isEqualTo("HOST_OFFHEAP");
            assertThat(d.getReferenceReason()).contains("repacked as q4_0_8x8");
        });
    }
}
