package dev.placementaudit.core.placement;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class PlacementPolicyTest {
    private static final PlacementPolicy EDGE_FULL = new PlacementPolicy(PlannerProfile.EDGE, StorageCapabilities.FULL);

    @Test
    void digestIsStableAndHex() {
        assertThat(EDGE_FULL.digest()).isEqualTo(new PlacementPolicy(PlannerProfile.EDGE, StorageCapabilities.FULL).digest())
                .hasSize(64).matches("[0-9a-f]+");
    }

    @Test
    void digestChangesWithWhatMovesATensor() {
        assertThat(new PlacementPolicy(PlannerProfile.EDGE.withOffHeapThreshold(1_048_576), StorageCapabilities.FULL).digest())
                .isNotEqualTo(EDGE_FULL.digest());
        assertThat(new PlacementPolicy(PlannerProfile.EDGE, StorageCapabilities.FULL
                .withMappedServableEncodings(StorageCapabilities.MAPPED_SERVABLE_1189)).digest())
                .isNotEqualTo(EDGE_FULL.digest());
        assertThat(new PlacementPolicy(PlannerProfile.EDGE, StorageCapabilities.FULL.withOffHeap(false)).digest())
                .isNotEqualTo(EDGE_FULL.digest());
    }

    @Test
    void digestIgnoresWhatCannotMoveATensor() {
        PlannerProfile renamed = new PlannerProfile("edge-canary", 0, 512, KvCacheMode.TURBOQUANT_4, 0.5, 262_144, 0.2, false, true);

        assertThat(new PlacementPolicy(renamed, StorageCapabilities.FULL).digest()).isEqualTo(EDGE_FULL.digest());
    }
}
