package dev.placementaudit.store.ingest;

import dev.placementaudit.events.AllocationDecided;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A batch's decisions grouped by load, and each deployment's highest {@code model-loads} offset among them: the same
 * whatever order the decisions come in (runs of one load, loads interleaved, a load published twice, a decision that
 * names another deployment than the rest of its load's).
 */
class BatchRecordsTest {
    private long offset;

    @Test
    void eachDeploymentsHighestOffsetIsTheHighestOfItsDecisionsHoweverTheyCome() {
        List<Decoded> batch = new ArrayList<>();
        batch.addAll(decisions("load-a", "edge-1", 10, 3));
        batch.addAll(decisions("load-b", "edge-2", 4, 2));
        // load-a again, its second half after load-b's: at a lower offset than before, then a higher one (published twice).
        batch.addAll(decisions("load-a", "edge-1", 7, 2));
        batch.addAll(decisions("load-a", "edge-1", 12, 1));
        // A run of load-c whose middle decision names another deployment at the same offset (a record unlike its load's).
        batch.addAll(decisions("load-c", "edge-3", 20, 2));
        batch.addAll(decisions("load-c", "edge-4", 20, 1));
        batch.addAll(decisions("load-c", "edge-3", 20, 2));
        batch.addAll(decisions("load-b", "edge-2", 5, 1));

        BatchRecords records = BatchRecords.of(batch);

        assertThat(records.decidedThrough()).isEqualTo(highestPerDeployment(batch))
                .isEqualTo(Map.of("edge-1", 12L, "edge-2", 5L, "edge-3", 20L, "edge-4", 20L));
        assertThat(records.decisionsByLoad().keySet()).containsExactly("load-a", "load-b", "load-c");
        assertThat(records.decisionsByLoad().get("load-a")).hasSize(6);
        assertThat(records.decisionsByLoad().get("load-b")).hasSize(3);
        assertThat(records.decisionsByLoad().get("load-c")).hasSize(5);
        assertThat(records.decisionRecords()).isEqualTo(batch.size());
        assertThat(records.deployments()).containsExactly("edge-1", "edge-2", "edge-3");
    }

    /** What the batch says, decision by decision. */
    private static Map<String, Long> highestPerDeployment(List<Decoded> batch) {
        Map<String, Long> highest = new HashMap<>();
        for (Decoded item : batch) {
            AllocationDecided d = ((Decoded.Decision) item).event();
            highest.merge(d.getDeploymentId(), d.getSourceOffset(), Math::max);
        }
        return highest;
    }

    private List<Decoded> decisions(String loadId, String deployment, long sourceOffset, int count) {
        List<Decoded> decisions = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            AllocationDecided event = new AllocationDecided();
            // Strings made anew for each record, as decoding makes them.
            event.put("loadId", new String(loadId));
            event.put("deploymentId", new String(deployment));
            event.put("sourceTopic", "model-loads");
            event.put("sourcePartition", 0);
            event.put("sourceOffset", sourceOffset);
            decisions.add(new Decoded.Decision(new ConsumerRecord<>("placement-decisions", 0, offset++, null, null), event));
        }
        return decisions;
    }
}
