package dev.placementaudit.store.regression;

/** One tensor's stored decision, as the diff needs it. */
public record TensorPlacement(String name, int index, String domain, long residentBytes, String residentFormat, String reasonCode, String reason) {
}
