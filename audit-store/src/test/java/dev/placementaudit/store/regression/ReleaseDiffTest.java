package dev.placementaudit.store.regression;

import dev.placementaudit.store.plans.TensorPlacement;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class ReleaseDiffTest {
    private static final GrowthRule TEN_PERCENT_AND_1_MB = new GrowthRule("off-heap", 10, 1 << 20);
    private static final GrowthRule NEVER = new GrowthRule("heap", 100, Long.MAX_VALUE);

    private static TensorPlacement t(String name, String domain, long bytes, String format) {
        return new TensorPlacement(name, 0, domain, bytes, format, "X", name + " in " + domain);
    }

    @Test
    void aTensorThatLeavesTheMappingIsLostMappingWithBothReasons() {
        List<Finding> findings = ReleaseDiff.compare(
                List.of(t("w", "MMAP_FILE", 589_824, "Float32/Q4_K")),
                List.of(t("w", "HOST_OFFHEAP", 4_194_304, "Float32/Dense(4B)")), TEN_PERCENT_AND_1_MB, NEVER);

        assertThat(findings).extracting(Finding::kind).containsExactly(FindingKind.LOST_MAPPING, FindingKind.FORMAT_CHANGED,
                FindingKind.OFFHEAP_GROWTH);
        Finding lost = findings.get(0);
        assertThat(lost.beforeReason()).isEqualTo("w in MMAP_FILE");
        assertThat(lost.afterReason()).isEqualTo("w in HOST_OFFHEAP");
        assertThat(lost.deltaBytes()).isEqualTo(4_194_304 - 589_824);
    }

    @Test
    void reportsAddedRemovedAndDomainMoves() {
        List<Finding> findings = ReleaseDiff.compare(
                List.of(t("a", "HOST_HEAP", 10, "f"), t("gone", "HOST_HEAP", 10, "f")),
                List.of(t("a", "HOST_OFFHEAP", 10, "f"), t("new", "MMAP_FILE", 10, "f")), TEN_PERCENT_AND_1_MB, NEVER);

        assertThat(findings).extracting(Finding::kind, Finding::tensorName).containsExactly(
                org.assertj.core.groups.Tuple.tuple(FindingKind.DOMAIN_CHANGED, "a"),
                org.assertj.core.groups.Tuple.tuple(FindingKind.TENSOR_ADDED, "new"),
                org.assertj.core.groups.Tuple.tuple(FindingKind.TENSOR_REMOVED, "gone"));
    }

    @Test
    void identicalLoadsHaveNoFindings() {
        List<TensorPlacement> load = List.of(t("a", "MMAP_FILE", 100, "f"), t("b", "HOST_OFFHEAP", 1 << 22, "g"));

        assertThat(ReleaseDiff.compare(load, load, TEN_PERCENT_AND_1_MB, NEVER)).isEmpty();
    }

    @Test
    void growthMustPassBothThePercentAndTheBytes() {
        GrowthRule rule = new GrowthRule("off-heap", 10, 1_000);

        assertThat(rule.fires(100_000, 105_000)).as("5%").isFalse();
        assertThat(rule.fires(1_000, 1_900)).as("90% but only 900 B").isFalse();
        assertThat(rule.fires(100_000, 112_000)).as("12% and 12 KB").isTrue();
        assertThat(rule.fires(0, 1_001)).as("from nothing").isTrue();
        assertThat(rule.fires(100_000, 50_000)).as("shrinking").isFalse();
        assertThat(rule.describe()).isEqualTo("off-heap growth > 10% and > 1000 B");
    }
}
