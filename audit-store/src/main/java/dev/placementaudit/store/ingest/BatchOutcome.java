package dev.placementaudit.store.ingest;

import dev.placementaudit.store.alerts.AlertOutbox;
import dev.placementaudit.store.chain.ChainHead;
import dev.placementaudit.store.incidents.IncidentLedger;
import dev.placementaudit.store.incidents.RuntimeIncidents;
import dev.placementaudit.store.regression.Detection;
import dev.placementaudit.store.regression.LoadRef;

import java.util.List;
import java.util.Map;

/**
 * What one committed batch did: the decision and summary records it took, the decision rows it staged (loads not whole
 * in the batch, or events without a plan digest), the plan tensor rows it wrote (plans first seen), what completed,
 * the incidents it opened, resolved or reopened, how long each of its {@link BatchPhase phases} took,
 * the complete loads it looked at that have an observation (planned beside observed), and the observations it set aside
 * as another deployment's ({@code load_id/deployment_id}: they came before their load, which is another deployment's).
 */
public record BatchOutcome(int decisions, int summaries, int stagedDecisions, int planTensorRows, List<CompletedLoad> completed, List<Detection> detections,
                           List<AlertOutbox.StoredAlert> alerts, List<IncidentLedger.Change> incidents, List<ChainHead> chainHeads, Map<BatchPhase, Long> phaseNanos,
                           List<RuntimeIncidents.ObservedLoad> observed, List<String> observationsDetached) {
    public BatchOutcome(int decisions, int summaries, int stagedDecisions, int planTensorRows, List<CompletedLoad> completed, List<Detection> detections,
                        List<AlertOutbox.StoredAlert> alerts, List<IncidentLedger.Change> incidents, List<ChainHead> chainHeads,
                        Map<BatchPhase, Long> phaseNanos, List<RuntimeIncidents.ObservedLoad> observed) {
        this(decisions, summaries, stagedDecisions, planTensorRows, completed, detections, alerts, incidents, chainHeads, phaseNanos, observed, List.of());
    }

    public BatchOutcome {
        observationsDetached = List.copyOf(observationsDetached);
        observed = List.copyOf(observed);
        phaseNanos = Map.copyOf(phaseNanos);
        chainHeads = List.copyOf(chainHeads);
        completed = List.copyOf(completed);
        detections = List.copyOf(detections);
        alerts = List.copyOf(alerts);
        incidents = List.copyOf(incidents);
    }

    /** A load the batch completed, with its totals per domain (as its summary says): what the gauges show. */
    public record CompletedLoad(LoadRef load, long heapBytes, long offHeapBytes, long mappedBytes) {
    }
}
