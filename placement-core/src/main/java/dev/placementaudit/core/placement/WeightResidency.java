package dev.placementaudit.core.placement;

public enum WeightResidency {
    HEAP,
    MAPPED
}
