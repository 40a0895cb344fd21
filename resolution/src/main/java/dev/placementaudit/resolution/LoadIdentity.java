package dev.placementaudit.resolution;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What a load says it is, as far as a load id must stand for one load only: where it ran, which release and model
 * file, on which platform and profile, when, and how many tensors. Two events under one load id with the same identity
 * are the same load sent again (a retry, a re-encoding), a silent no-op; with another identity, they are a conflict,
 * dead-lettered by the worker (among the loads it saw lately) and by the store (against every load it holds). What the
 * resolver made of the load (plan, policy, resident bytes) is no part of it: the same load resolved by a newer worker
 * is still the same load. The time is compared to the millisecond, as the events carry it.
 */
public record LoadIdentity(String deploymentId, String release, String modelId, String modelSha256, String platform, String profile,
                           Instant occurredAt, int tensorCount) {
    /** The dead letter's detail for a load id that came again with another identity. */
    public static final String CONFLICT = "LOAD_ID_CONFLICT";

    public LoadIdentity {
        occurredAt = occurredAt.truncatedTo(ChronoUnit.MILLIS);
    }

    public static LoadIdentity of(LoadResolved l) {
        return new LoadIdentity(l.getDeploymentId(), l.getRelease(), l.getModelId(), l.getModelSha256(), l.getPlatformName(), l.getProfileName(),
                l.getLoadOccurredAt(), l.getTensorCount());
    }

    public static LoadIdentity of(AllocationDecided d) {
        return new LoadIdentity(d.getDeploymentId(), d.getRelease(), d.getModelId(), d.getModelSha256(), d.getPlatformName(), d.getProfileName(),
                Instant.ofEpochMilli(d.getLoadOccurredAt()), d.getTensorCount());
    }

    /** What differs from the load first seen under the id, in words ({@code deployment a-2, not a-1; ...}); empty when nothing does. */
    public List<String> differencesFrom(LoadIdentity first) {
        List<String> differences = new ArrayList<>();
        differ(differences, "deployment", deploymentId, first.deploymentId);
        differ(differences, "release", release, first.release);
        differ(differences, "model", modelId, first.modelId);
        differ(differences, "model sha-256", modelSha256, first.modelSha256);
        differ(differences, "platform", platform, first.platform);
        differ(differences, "profile", profile, first.profile);
        differ(differences, "loaded at", occurredAt, first.occurredAt);
        differ(differences, "tensors", tensorCount, first.tensorCount);
        return differences;
    }

    /**
     * The dead letter's text for this load under {@code loadId}, when the load first seen under it was {@code first}; null
     * when they are the same load.
     *
     * @param where where the first one was seen ({@code "stored"}, {@code "seen by this worker"})
     */
    public String conflictWith(String loadId, LoadIdentity first, String where) {
        List<String> differences = differencesFrom(first);
        return differences.isEmpty() ? null : "load id " + loadId + " came again with other content (" + String.join("; ", differences)
                + ") than the load " + where + " under it: a load id stands for one load, the first one kept";
    }

    private static void differ(List<String> differences, String what, Object value, Object first) {
        if (!Objects.equals(value, first)) {
            differences.add(what + " " + value + ", not " + first);
        }
    }
}
