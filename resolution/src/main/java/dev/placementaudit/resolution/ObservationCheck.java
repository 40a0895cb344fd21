package dev.placementaudit.resolution;

import dev.placementaudit.events.LoadObserved;

/**
 * What the audit store cannot hold of a {@link LoadObserved}: the one check both the store (which dead-letters such an
 * observation) and the collector (which refuses it to its sender) make, so a device hears the store's reason.
 */
public final class ObservationCheck {
    /** The store's {@code deployment_id} column. */
    public static final int MAX_DEPLOYMENT_ID = 200;

    private ObservationCheck() {
    }

    /** Why the observation cannot be stored, else null. */
    public static String problem(LoadObserved o) {
        if (o.getDeploymentId().length() > MAX_DEPLOYMENT_ID) {
            return "a deployment id over " + MAX_DEPLOYMENT_ID + " characters: '" + o.getDeploymentId().substring(0, 40) + "...'";
        }
        if (o.getDeploymentId().isBlank()) {
            return "a blank deployment id";
        }
        return null;
    }
}
