package dev.placementaudit.core.placement;

/** A relabelling only, no byte moves: irrelevant to placement, carried so an event says what the loader does. */
public enum WeightShapeOrientation {
    AS_STORED,
    OUT_IN
}
