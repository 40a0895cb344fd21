package dev.placementaudit.producer.model;

import dev.placementaudit.core.placement.StorageCapabilities;

import java.util.Objects;

/** Where a model is loaded: which deployment, release and platform. */
public record DeploymentTarget(String deploymentId, String cluster, String host, String release,
                               String platformName, StorageCapabilities platform) {
    public DeploymentTarget {
        requireText(deploymentId, "deployment");
        requireText(cluster, "cluster");
        requireText(host, "host");
        requireText(release, "release");
        requireText(platformName, "platform");
        Objects.requireNonNull(platform, "platform");
    }

    private static void requireText(String value, String what) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(what + " must not be blank");
        }
    }
}
