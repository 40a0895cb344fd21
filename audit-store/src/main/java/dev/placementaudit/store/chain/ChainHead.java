package dev.placementaudit.store.chain;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import java.util.Objects;

/**
 * The last entry of a deployment's chain: what the store publishes to the compacted chain topic ({@link ChainLog}, with
 * the projection it belongs to) after each commit, so that a database rewritten together with its hashes still
 * disagrees with the log.
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record ChainHead(String deploymentId, long seq, String loadId, String entryHash) {
    public ChainHead {
        Objects.requireNonNull(deploymentId, "deploymentId");
        Objects.requireNonNull(entryHash, "entryHash");
    }
}
