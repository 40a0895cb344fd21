package dev.placementaudit.store;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.store.query.FleetQueries;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

@ExtendWith(KafkaBrokerExtension.class)
class FleetDriftTest {

    @DatabaseTest
    void aDeploymentThatPlacesAModelUnlikeTheFleetMajorityIsDrifting(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        List<ModelLoaded> loads = List.of(
                StoreHarness.load("a", "r2", 2, 0, false),
                StoreHarness.load("b", "r2", 2, 1, false),
                StoreHarness.load("c", "r2", 2, 2, false),
                StoreHarness.load("odd", "r2", 2, 3, true),
                StoreHarness.load("a", "r1", 2, -24, false));
        h.publish(loads);

        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 5);
            FleetQueries.FleetReport fleet = store.queries().fleet("r2");

            assertThat(fleet.deployments()).isEqualTo(4);
            assertThat(fleet.drifting()).containsExactly("odd");
            assertThat(fleet.withRegressions()).isEmpty();
            assertThat(fleet.offHeapBytes()).isEqualTo(4 * 524_288L + 2 * 4_194_304L);
            assertThat(fleet.rows()).filteredOn(r -> r.deploymentId().equals("odd")).singleElement()
                    .satisfies(r -> assertThat(r.driftsFromFleet()).isTrue());
        }
    }
}
