package dev.placementaudit.store.regression;

import java.time.Instant;

/** A stored load, as history queries need it; {@code planDigest} names its placement plan (null until it has one). */
public record LoadRef(String loadId, String deploymentId, String modelId, String release, Instant occurredAt, String resolverVersion,
                      String planDigest) {
}
