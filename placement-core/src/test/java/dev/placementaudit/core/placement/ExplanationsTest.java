package dev.placementaudit.core.placement;

import org.junit.jupiter.api.Test;

import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class ExplanationsTest {
    /** Every domain.md vector, each under every name twice over: shared reasons, cache hits and misses interleaved. */
    private static List<AllocationDecision> decisions() {
        List<AllocationDecision> decisions = new ArrayList<>();
        for (String name : List.of("blk.0.attn_q.weight", "blk.1.attn_q.weight", "blk.0.attn_q.weight")) {
            AllocationResolverVectorsTest.vectors().forEach(v -> decisions.add(AllocationResolver.resolve(
                    new PlanTensor(name, v.tensor().format(), v.tensor().elementCount(), v.tensor().bytes(), v.tensor().form()),
                    v.profile(), v.platform())));
        }
        return decisions;
    }

    @Test
    void rendersExactlyWhatEachDecisionExplainsWhileSharingReasons() {
        Explanations explanations = new Explanations();

        for (AllocationDecision decision : decisions()) {
            assertThat(decision.tensorName() + explanations.tailOf(decision)).isEqualTo(decision.explanation());
        }
    }

    @Test
    void decisionsWithOneReasonGetTheSameTailInstanceAfterTheirOwnName() {
        Explanations explanations = new Explanations();
        List<AllocationDecision> decisions = decisions();
        AllocationDecision first = decisions.get(0);
        AllocationDecision renamed = decisions.stream().filter(d -> !d.tensorName().equals(first.tensorName())).findFirst().orElseThrow();

        String tail = explanations.tailOf(first);

        assertThat(explanations.tailOf(renamed)).isSameAs(tail);
        assertThat(first.explanation()).isEqualTo(first.tensorName() + tail);
        assertThat(renamed.explanation()).isEqualTo(renamed.tensorName() + tail);
    }

    @Test
    void decisionsThatDifferOnlyInTheirNameShareOneReason() {
        List<AllocationDecision> decisions = decisions();
        AllocationDecision first = decisions.get(0);
        AllocationDecision renamed = decisions.stream().filter(d -> !d.tensorName().equals(first.tensorName())).findFirst().orElseThrow();

        assertThat(renamed.reasonKey()).isEqualTo(first.reasonKey());
        long underOneName = decisions.stream().filter(d -> d.tensorName().equals(first.tensorName()))
                .map(AllocationDecision::reasonKey).distinct().count();
        assertThat(decisions.stream().map(AllocationDecision::reasonKey).distinct().count())
                .as("more names, no more reasons").isEqualTo(underOneName);
    }

    /** If AllocationDecision gains a component, the key must gain it too, or two reasons could share one text. */
    @Test
    void reasonKeyHoldsEveryComponentButTheTensorName() {
        List<String> decision = components(AllocationDecision.class);
        decision.remove("String tensorName");

        assertThat(components(AllocationDecision.ReasonKey.class)).containsExactlyElementsOf(decision);
    }

    private static List<String> components(Class<? extends Record> type) {
        return new ArrayList<>(Arrays.stream(type.getRecordComponents())
                .map((RecordComponent c) -> c.getGenericType().getTypeName().replaceAll("[\\w.]+\\.", "") + " " + c.getName()).toList());
    }
}
