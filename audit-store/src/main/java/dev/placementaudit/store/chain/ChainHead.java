package dev.placementaudit.store.chain;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * The last entry of a deployment's chain: what the store publishes to the compacted chain topic ({@link ChainLog}, with
 * the projection it belongs to) after each commit, so that a database rewritten together with its hashes still
 * disagrees with the log.
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record ChainHead(String deploymentId, long seq, String loadId, String entryHash) {
    private static final ObjectMapper JSON = new ObjectMapper();

    public ChainHead {
        Objects.requireNonNull(deploymentId, "deploymentId");
        Objects.requireNonNull(entryHash, "entryHash");
    }

    public static ChainHead fromJson(byte[] json) {
        try {
            return JSON.readValue(json, ChainHead.class);
        } catch (IOException e) {
            throw new UncheckedIOException("not a chain head: " + new String(json, StandardCharsets.UTF_8), e);
        }
    }
}
