package dev.placementaudit.collector;

import java.util.HexFormat;
import java.util.List;

/**
 * One fleet's right to write: the SHA-256 digest of its token (the token itself is never configured, so a leaked
 * configuration file does not leak it) and the deployments it may write, each an exact id or a prefix ending in
 * {@code *} ({@code android-*}).
 */
public record Fleet(String name, byte[] tokenDigest, List<String> deployments, double requestsPerSecond, int burst) {
    public Fleet {
        tokenDigest = tokenDigest.clone();
        deployments = List.copyOf(deployments);
    }

    /** Whether this fleet may write {@code deploymentId}. */
    public boolean mayWrite(String deploymentId) {
        for (String allowed : deployments) {
            if (allowed.endsWith("*") ? deploymentId.startsWith(allowed.substring(0, allowed.length() - 1)) : deploymentId.equals(allowed)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public byte[] tokenDigest() {
        return tokenDigest.clone();
    }

    @Override
    public String toString() {
        return "Fleet[" + name + ", token sha256 " + HexFormat.of().formatHex(tokenDigest).substring(0, 8) + "..., deployments " + deployments
                + ", " + requestsPerSecond + "/s burst " + burst + "]";
    }
}
