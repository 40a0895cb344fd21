package dev.placementaudit.core.placement;

/** How long an allocation lives. Weights are always MODEL. */
public enum ScopeKind {
    /** Until the model closes: weights, KV backing, embeddings. */
    MODEL,
    /** Recycled every forward pass: activations and scratch. */
    FORWARD,
    /** GC-managed, no explicit lifetime. */
    AMBIENT
}
