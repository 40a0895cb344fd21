package dev.placementaudit.resolution.llamacpp;

import dev.placementaudit.core.format.GgmlType;
import dev.placementaudit.core.placement.MemoryDomain;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The b4916 rules on CPUs this machine is not: ARM's layouts, shapes that do not fit, a build without the repack buffer. */
class LlamaCppPolicyTest {
    private static final CpuFeatures AVX2 = CpuFeatures.named("avx2");

    private static LlamaCppPolicy.Weight w(String name, GgmlType type, long offset, long... dims) {
        return new LlamaCppPolicy.Weight(name, type, dims, offset);
    }

    private static LlamaCppPolicy.Placed only(LlamaCppPolicy.Weight weight, CpuFeatures cpu, boolean mmap) {
        return LlamaCppPolicy.plan(List.of(weight), cpu, mmap).weights().get(0);
    }

    @Test
    void q4_0TakesTheWidestLayoutTheCpuHasAndItsRowsFit() {
        LlamaCppPolicy.Weight q = w("blk.0.attn_q.weight", GgmlType.Q4_0, 0, 256, 256);
        assertThat(only(q, AVX2, true).layout()).contains("q4_0_8x8");
        assertThat(only(q, CpuFeatures.named("arm-sve256"), true).layout()).contains("q4_0_8x8");
        assertThat(only(q, CpuFeatures.named("arm-i8mm"), true).layout()).contains("q4_0_4x8");
        assertThat(only(q, CpuFeatures.named("arm-dotprod"), true).layout()).contains("q4_0_4x4");
        assertThat(only(q, CpuFeatures.named("x86-sse"), true).reason()).isEqualTo(LlamaCppPolicy.Reason.NO_LAYOUT);

        LlamaCppPolicy.Weight twelveRows = w("blk.0.attn_q.weight", GgmlType.Q4_0, 0, 256, 12);
        assertThat(only(twelveRows, AVX2, true).reason()).isEqualTo(LlamaCppPolicy.Reason.ROWS_NOT_MULTIPLE);
        assertThat(only(twelveRows, CpuFeatures.named("arm-dotprod"), true).layout()).contains("q4_0_4x4");
    }

    @Test
    void iq4NlIsRepackedOnArmOnlyAndNothingElseIsInThisBuild() {
        LlamaCppPolicy.Weight iq = w("blk.0.ffn_up.weight", GgmlType.IQ4_NL, 0, 256, 512);
        assertThat(only(iq, CpuFeatures.named("arm-dotprod"), true).layout()).contains("iq4_nl_4x4");
        assertThat(only(iq, AVX2, true).layout()).isEmpty();
        for (GgmlType type : List.of(GgmlType.Q4_K, GgmlType.Q8_0, GgmlType.F16, GgmlType.Q6_K)) {
            LlamaCppPolicy.Placed placed = only(w("blk.0.ffn_up.weight", type, 0, 256, 512), CpuFeatures.named("arm-sve256"), true);
            assertThat(placed.layout()).as(type.name()).isEmpty();
            assertThat(placed.domain()).isEqualTo(MemoryDomain.MMAP_FILE);
            assertThat(placed.detail()).isEqualTo("llama.cpp b4916 repacks no " + type.name().toLowerCase() + " for arm-sve256; kept in the file's pages");
        }
    }

    @Test
    void theEmbeddingAndNormsAreNeverRepackedAndMmapOffCopiesThem() {
        LlamaCppPolicy.Placed embd = only(w("token_embd.weight", GgmlType.Q4_0, 0, 256, 1024), AVX2, false);
        assertThat(embd.reason()).isEqualTo(LlamaCppPolicy.Reason.ROW_READ);
        assertThat(embd.buffer()).isEqualTo(LlamaCppPolicy.HOST);
        assertThat(embd.domain()).isEqualTo(MemoryDomain.HOST_OFFHEAP);
        assertThat(only(w("output_norm.weight", GgmlType.F32, 0, 256), AVX2, true).reason()).isEqualTo(LlamaCppPolicy.Reason.NOT_A_MATRIX);
        CpuFeatures noBuffer = CpuFeatures.fromSystemInfo("system_info: CPU : SSE3 = 1 | AVX2 = 1 | AARCH64_REPACK = 0 |");
        assertThat(only(w("output.weight", GgmlType.Q4_0, 0, 256, 1024), noBuffer, true).reason()).isEqualTo(LlamaCppPolicy.Reason.NO_REPACK_BUFFER);
    }

    @Test
    void theMappedBufferSpansTheFileFromTheFirstMappedWeightToTheEndOfTheLastAndAllocatedOnesArePadded() {
        List<LlamaCppPolicy.Weight> weights = List.of(
                w("token_embd.weight", GgmlType.Q8_0, 1000, 32, 8),
                w("blk.0.attn_q.weight", GgmlType.Q4_0, 2000, 32, 8),
                w("output_norm.weight", GgmlType.F32, 3000, 5));
        LlamaCppPolicy.Plan mapped = LlamaCppPolicy.plan(weights, AVX2, true);
        assertThat(mapped.buffers()).containsEntry(LlamaCppPolicy.MAPPED, 3000 + 20 - 1000L)
                .containsEntry(LlamaCppPolicy.REPACK, 160L);
        LlamaCppPolicy.Plan copied = LlamaCppPolicy.plan(weights, AVX2, false);
        assertThat(copied.buffers()).containsEntry(LlamaCppPolicy.HOST, 288 + 32L).doesNotContainKey(LlamaCppPolicy.MAPPED);
    }

    @Test
    void cpusAreNamedOrReadFromLlamaCppsSystemInfo() {
        CpuFeatures reported = CpuFeatures.fromSystemInfo("system_info: n_threads = 2 | CPU : SSE3 = 1 | AVX2 = 1 | F16C = 1 | AARCH64_REPACK = 1 |");
        assertThat(reported.features()).containsExactlyInAnyOrder(CpuFeatures.Feature.AVX2, CpuFeatures.Feature.AARCH64_REPACK);
        assertThat(reported.describe()).isEqualTo("AARCH64_REPACK,AVX2");
        assertThatThrownBy(() -> CpuFeatures.named("z80")).hasMessage("no CPU named 'z80'; there are arm-dotprod, arm-i8mm, arm-sve256, avx2, x86-sse");
        assertThat(Optional.of(CpuFeatures.named("ARM-I8MM"))).get().extracting(CpuFeatures::name).isEqualTo("arm-i8mm");
    }
}
