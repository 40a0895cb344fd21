package dev.placementaudit.store.regression;

import dev.placementaudit.store.plans.TensorPlacement;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

class RootCausesTest {
    private static final long Q6K = 13_762_560L;
    private static final long F32 = 52_428_800L;

    private static TensorPlacement mapped(String name, int i) {
        return new TensorPlacement(name, i, "MMAP_FILE", Q6K, "Float32/Q6_K", "Float32/Q6_K", "MAPPED_OK", "", "mapped read-only");
    }

    private static TensorPlacement dequantizedOffHeap(String name, int i) {
        return new TensorPlacement(name, i, "HOST_OFFHEAP", F32, "Float32/Q6_K", "Float32/Dense(4B)", "REENCODED_AT_LOAD", "REENCODED_AT_LOAD",
                "re-encoded at load (Float32/Q6_K -> Float32/Dense(4B))");
    }

    private static TensorPlacement q6kOffHeap(String name, int i) {
        return new TensorPlacement(name, i, "HOST_OFFHEAP", Q6K, "Float32/Q6_K", "Float32/Q6_K", "ABOVE_THRESHOLD", "", "above the threshold");
    }

    private static TensorPlacement dequantizedNotMapped(String name, int i) {
        return new TensorPlacement(name, i, "HOST_OFFHEAP", F32, "Float32/Q6_K", "Float32/Dense(4B)", "ABOVE_THRESHOLD", "", "above the threshold");
    }

    private static TensorPlacement norm(int i) {
        return new TensorPlacement("blk." + i + ".attn_norm.weight", 100 + i, "HOST_HEAP", 8_192, "Float32/Dense(4B)", "Float32/Dense(4B)",
                "BELOW_THRESHOLD", "", "small");
    }

    @Test
    void sixteenDequantizedWeightsAreOneCauseNotThirtyThreeFindings() {
        List<TensorPlacement> before = new ArrayList<>();
        List<TensorPlacement> after = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            before.add(mapped("blk." + i + ".ffn_down.weight", i));
            after.add(dequantizedOffHeap("blk." + i + ".ffn_down.weight", i));
            before.add(norm(i));
            after.add(norm(i));
        }
        before.add(norm(99));

        List<RootCauses.CauseGroup> causes = RootCauses.of(before, after);

        assertThat(causes).hasSize(2);
        RootCauses.CauseGroup dequantized = causes.get(0);
        assertThat(dequantized.tensorCount()).isEqualTo(16);
        assertThat(dequantized.cause()).isEqualTo("16 tensors re-encoded at load (Float32/Q6_K -> Float32/Dense(4B)): lost mapping, "
                + "+800 MB off-heap, -210 MB mapped");
        assertThat(dequantized.deltaBytesByDomain()).containsExactly(java.util.Map.entry("HOST_OFFHEAP", 16 * F32),
                java.util.Map.entry("MMAP_FILE", -16 * Q6K));
        assertThat(dequantized.beforeReason()).isEqualTo("MAPPED_OK");
        assertThat(dequantized.afterReason()).isEqualTo("REENCODED_AT_LOAD");
        assertThat(dequantized.tensors()).hasSize(16).allSatisfy(t -> assertThat(t.placement()).isEqualTo("mapped 13 MB -> off-heap 50 MB"));
        assertThat(causes.get(1).cause()).isEqualTo("1 tensor removed: -8 KB heap");
        assertThat(RootCauses.topTensors(causes, "HOST_OFFHEAP", 5)).hasSize(5).extracting(RootCauses.TensorChange::name)
                .containsExactly("blk.0.ffn_down.weight", "blk.1.ffn_down.weight", "blk.10.ffn_down.weight", "blk.11.ffn_down.weight",
                        "blk.12.ffn_down.weight");
    }

    @Test
    void growthWhereNoMappingChangedStillNamesItsCauseAndItsTensors() {
        // A server that never maps: the weights were off-heap before and after; only their format (and size) changed.
        List<TensorPlacement> before = IntStream.range(0, 16).mapToObj(i -> q6kOffHeap("blk." + i + ".ffn_down.weight", i)).toList();
        List<TensorPlacement> after = IntStream.range(0, 16).mapToObj(i -> dequantizedNotMapped("blk." + i + ".ffn_down.weight", i)).toList();

        List<RootCauses.CauseGroup> causes = RootCauses.of(before, after);

        assertThat(causes).singleElement().satisfies(g -> assertThat(g.cause())
                .isEqualTo("16 tensors re-encoded at load (Float32/Q6_K -> Float32/Dense(4B)): +590 MB off-heap"));
        assertThat(RootCauses.touching(causes, "HOST_OFFHEAP")).hasSize(1);
        assertThat(RootCauses.topTensors(causes, "HOST_OFFHEAP", 5)).hasSize(5)
                .allSatisfy(t -> assertThat(t.deltaBytes()).isEqualTo(F32 - Q6K));
    }

    @Test
    void theSameTwoLoadsReadTheSameWhateverTheOrderOfTheirRows() {
        List<TensorPlacement> before = new ArrayList<>();
        List<TensorPlacement> after = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            before.add(i % 3 == 0 ? mapped("w" + i, i) : q6kOffHeap("w" + i, i));
            after.add(i % 2 == 0 ? dequantizedOffHeap("w" + i, i) : dequantizedNotMapped("w" + i, i));
        }
        List<RootCauses.CauseGroup> expected = RootCauses.of(before, after);
        Random random = new Random(7);
        for (int round = 0; round < 10; round++) {
            List<TensorPlacement> b = new ArrayList<>(before);
            List<TensorPlacement> a = new ArrayList<>(after);
            Collections.shuffle(b, random);
            Collections.shuffle(a, random);

            assertThat(RootCauses.of(b, a)).isEqualTo(expected);
        }
        assertThat(expected).extracting(RootCauses.CauseGroup::bytesMoved).isSortedAccordingTo(java.util.Comparator.reverseOrder());
    }

    @Test
    void nothingMovedIsNoCause() {
        List<TensorPlacement> same = List.of(mapped("a", 0), norm(1));
        assertThat(RootCauses.of(same, same)).isEmpty();
        assertThat(RootCauses.topTensors(List.of(), "HOST_OFFHEAP", 5)).isEmpty();
    }
}
