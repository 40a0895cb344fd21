package dev.placementaudit.worker.resolve;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;

import java.util.List;

/** One decision per tensor, in tensor order, and the summary that marks the load complete. */
public record ResolvedLoad(List<AllocationDecided> decisions, LoadResolved summary) {
    public ResolvedLoad {
        decisions = List.copyOf(decisions);
    }
}
