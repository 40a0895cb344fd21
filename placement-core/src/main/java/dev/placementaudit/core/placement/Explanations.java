package dev.placementaudit.core.placement;

import java.util.HashMap;
import java.util.Map;

/**
 * Renders the explanations of many decisions, each distinct "why" once. The tensors of one model share a handful of
 * reasons (every layer's attention weight is priced and placed alike), and a worker explains every tensor of every
 * load, so rendering each reason afresh was a tenth of its CPU. The text is exactly
 * {@link AllocationDecision#explanation()}'s. Not thread-safe; meant for one load at a time, so it stays small.
 */
public final class Explanations {
    private final Map<AllocationDecision.ReasonKey, String> reasons = new HashMap<>();

    public String of(AllocationDecision decision) {
        return decision.explanation(reasons.computeIfAbsent(decision.reasonKey(), key -> decision.reasonText()));
    }
}
