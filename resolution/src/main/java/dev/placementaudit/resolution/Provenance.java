package dev.placementaudit.resolution;

/** Where the ModelLoaded came from in the log; stamped on every decision so any row leads back to its input. */
public record Provenance(String topic, int partition, long offset) {
}
