package dev.placementaudit.core.placement;

import java.util.HashMap;
import java.util.Map;

/**
 * Renders the explanations of many decisions, each distinct "why" once. The tensors of one model share a handful of
 * reasons (every layer's attention weight is priced and placed alike), and a worker explains every tensor of every
 * load, so rendering each reason afresh was a tenth of its CPU. A decision's name followed by its tail is exactly
 * {@link AllocationDecision#explanation()}. Not thread-safe; meant for one load at a time, so it stays small.
 */
public final class Explanations {
    private final Map<AllocationDecision.ReasonKey, String> tails = new HashMap<>();

    /**
     * The explanation less the tensor's name in front ({@code : <DOMAIN>/<SCOPE> — <why>}): the very same instance
     * for every decision with an equal reason, so a caller that writes many of them can keep each one's encoded form.
     */
    public String tailOf(AllocationDecision decision) {
        return tails.computeIfAbsent(decision.reasonKey(), key -> decision.explanationTail(decision.reasonText()));
    }
}
