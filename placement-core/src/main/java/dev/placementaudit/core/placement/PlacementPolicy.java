package dev.placementaudit.core.placement;

import dev.placementaudit.core.format.TensorEncoding;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.stream.Collectors;

/**
 * Everything besides the tensor and its form that decides a placement. Two decisions with the same digest were
 * made under the same rules, so a changed domain between them is the tensor's doing, not the policy's.
 */
public record PlacementPolicy(PlannerProfile profile, StorageCapabilities platform) {

    /** Only what placement reads; the profile's name and KV settings do not move a tensor. */
    public String canonicalForm() {
        String servable = platform.mappedServableEncodings().stream().map(TensorEncoding::spec).sorted()
                .collect(Collectors.joining(","));
        return "rules=" + AllocationResolver.RULES_VERSION
                + ";offHeapThreshold=" + profile.offHeapThresholdBytes()
                + ";weightsMapped=" + profile.weightsMapped()
                + ";strict=" + profile.strict()
                + ";mappedFiles=" + platform.supportsMappedFiles()
                + ";offHeap=" + platform.supportsOffHeap()
                + ";servable=[" + servable + "]";
    }

    /** SHA-256 of the canonical form, lower-case hex. */
    public String digest() {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(canonicalForm().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(hash);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM ships SHA-256", e);
        }
    }
}
