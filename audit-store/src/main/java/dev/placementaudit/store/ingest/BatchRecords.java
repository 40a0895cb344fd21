package dev.placementaudit.store.ingest;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * A batch's records sorted for writing: each load's decisions, in the order met; the summaries, the first of each load;
 * every load and deployment touched (deployments sorted, the order their locks are taken in); and per deployment the
 * highest {@code model-loads} offset of its decisions here; the observations, the first of each load.
 */
record BatchRecords(Map<String, List<Decoded.Decision>> decisionsByLoad, Map<String, Decoded.Summary> summaries, Set<String> touched,
                    Set<String> deployments, Map<String, Long> decidedThrough, int decisionRecords, int summaryRecords,
                    Map<String, Decoded.Observation> observations) {

    static BatchRecords of(List<Decoded> batch) {
        Map<String, List<Decoded.Decision>> byLoad = new LinkedHashMap<>();
        Map<String, Decoded.Summary> summaries = new LinkedHashMap<>();
        Set<String> touched = new LinkedHashSet<>();
        Set<String> deployments = new TreeSet<>();
        Map<String, Long> decidedThrough = new HashMap<>();
        int decisionRecords = 0;
        int summaryRecords = 0;
        Map<String, Decoded.Observation> observations = new LinkedHashMap<>();
        // A load's decisions come one after another (one partition, published together): the group is looked up again
        // only when the load changes. They name its deployment and the offset of the load they resolve: the deployment's
        // highest offset is merged once per run of them, and again only where either changes (a load published twice).
        String lastLoadId = null;
        String lastDeployment = null;
        long lastOffset = -1;
        List<Decoded.Decision> group = null;
        for (Decoded item : batch) {
            if (item instanceof Decoded.Decision decision) {
                String loadId = decision.event().getLoadId();
                String deployment = decision.event().getDeploymentId();
                long offset = decision.event().getSourceOffset();
                if (!loadId.equals(lastLoadId)) {
                    group = byLoad.get(loadId);
                    lastLoadId = loadId;
                    lastDeployment = null;
                }
                if (group == null) {
                    group = new ArrayList<>();
                    byLoad.put(loadId, group);
                    touched.add(loadId);
                    deployments.add(deployment);
                }
                group.add(decision);
                if (offset != lastOffset || !deployment.equals(lastDeployment)) {
                    decidedThrough.merge(deployment, offset, Math::max);
                    lastOffset = offset;
                    lastDeployment = deployment;
                }
                decisionRecords++;
            } else if (item instanceof Decoded.Summary summary) {
                touched.add(summary.event().getLoadId().toString());
                deployments.add(summary.event().getDeploymentId());
                summaries.putIfAbsent(summary.event().getLoadId().toString(), summary);
                summaryRecords++;
            } else if (item instanceof Decoded.Observation observation) {
                // Written under its deployment's lock, like the load it is of: whichever of the two commits second sees the other.
                deployments.add(observation.event().getDeploymentId());
                observations.putIfAbsent(observation.event().getLoadId().toString(), observation);
            }
        }
        return new BatchRecords(byLoad, summaries, touched, deployments, decidedThrough, decisionRecords, summaryRecords, observations);
    }
}
