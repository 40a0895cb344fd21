package dev.placementaudit.resolution;

import dev.placementaudit.core.placement.PlacementPolicy;
import dev.placementaudit.core.placement.PlanTensor;
import dev.placementaudit.events.ModelLoaded;

import java.util.List;

/** A load whose content checked out, translated into the domain's types, in the event's tensor order. */
public record ValidLoad(ModelLoaded event, PlacementPolicy policy, List<PlanTensor> tensors) {
    public ValidLoad {
        tensors = List.copyOf(tensors);
    }
}
