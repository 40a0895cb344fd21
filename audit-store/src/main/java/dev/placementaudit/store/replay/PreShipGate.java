package dev.placementaudit.store.replay;

import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.resolution.Provenance;
import dev.placementaudit.resolution.ResolvedLoad;
import dev.placementaudit.resolution.ValidLoad;
import dev.placementaudit.store.db.ById;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.incidents.Cause;
import dev.placementaudit.store.plans.StoredPlans;
import dev.placementaudit.store.plans.TensorPlacement;
import dev.placementaudit.store.regression.Detection;
import dev.placementaudit.store.regression.GrowthRule;
import dev.placementaudit.store.regression.LoadRef;
import dev.placementaudit.store.regression.ReleaseDiff;
import dev.placementaudit.store.regression.RootCauses;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import javax.sql.DataSource;

/**
 * The pre-ship gate ({@code store whatif ... --gate}): if the candidate policy shipped now, each deployment's latest
 * load of each model would be planned anew; each such plan is compared with the one recorded for that load exactly
 * as a release is compared with the one before it, and every regression it shows is a cause, an incident in waiting.
 * One the fleet has open today (same model and same cause: domains, reasons, formats and tensors, whatever the
 * releases) is known; any other would open an incident, and the gate fails.
 */
public record PreShipGate(DataSource database, GrowthRule offHeap, GrowthRule heap) {
    /** The release a candidate's plans stand for in the comparison. */
    static final String CANDIDATE = "candidate";

    /**
     * A cause the candidate would bring, across the deployments that would show it.
     *
     * @param openIncident the open incident of the same model and cause the fleet has today, or null: a new incident
     */
    public record WouldOpen(String cause, String modelId, String fromRelease, String primaryKind, List<String> kinds, List<String> deployments,
                            long bytesMoved, String openIncident) {
    }

    /** What the gate found: the latest loads it re-planned, and the causes, new ones first. */
    public record Verdict(String policy, int loads, int replanned, List<WouldOpen> wouldOpen) {
        public List<WouldOpen> fresh() {
            return wouldOpen.stream().filter(w -> w.openIncident() == null).toList();
        }

        public boolean pass() {
            return fresh().isEmpty();
        }
    }

    /** @param latest each deployment's and model's latest load under the candidate ({@link WhatIf#latestUnderCandidate}) */
    public Verdict check(String policy, List<ValidLoad> latest) throws SQLException {
        LoadResolution resolution = new LoadResolution("what-if");
        Map<String, Builder> causes = new LinkedHashMap<>();
        int replanned = 0;
        try (Connection c = database.getConnection()) {
            for (ValidLoad load : latest) {
                String loadId = load.event().getLoadId().toString();
                Optional<String[]> recorded = Sql.first(c, "SELECT plan_digest, release_name FROM loads WHERE " + ById.is("") + " AND complete = TRUE",
                        rs -> new String[]{rs.getString(1), rs.getString(2)}, loadId);
                if (recorded.isEmpty() || recorded.get()[0] == null) {
                    continue; // not in the store (yet): nothing recorded to compare with
                }
                ResolvedLoad candidate = resolution.resolve(load, new Provenance("what-if", 0, 0), Instant.now());
                if (recorded.get()[0].equals(candidate.summary().getPlanDigest())) {
                    continue; // the same plan: nothing would move
                }
                replanned++;
                List<TensorPlacement> before = StoredPlans.placements(c, recorded.get()[0]);
                List<TensorPlacement> after = candidate.decisions().stream().map(StoredPlans::placement).toList();
                String deployment = load.event().getDeployment().getId();
                String model = load.event().getModel().getId();
                LoadRef was = new LoadRef(loadId, deployment, model, recorded.get()[1], load.event().getOccurredAt(), "recorded",
                        recorded.get()[0], new LoadRef.Position(0, 0));
                LoadRef would = new LoadRef(loadId, deployment, model, CANDIDATE, load.event().getOccurredAt(), "what-if",
                        candidate.summary().getPlanDigest(), new LoadRef.Position(0, 1));
                Detection detection = new Detection(would, was, ReleaseDiff.compare(before, after, offHeap, heap), RootCauses.of(before, after));
                for (Cause cause : Cause.of(detection)) {
                    causes.computeIfAbsent(cause.incidentId(), id -> new Builder(cause)).add(deployment, cause.group().bytesMoved());
                }
            }
            List<WouldOpen> wouldOpen = new ArrayList<>();
            for (Builder b : causes.values()) {
                RootCauses.CauseGroup g = b.cause.group();
                String open = Sql.first(c, "SELECT incident_id FROM incidents WHERE state = 'OPEN' AND model_id = ? AND tensors_digest = ? AND "
                        + "COALESCE(before_domain, '') = ? AND COALESCE(after_domain, '') = ? AND COALESCE(before_reason, '') = ? AND "
                        + "COALESCE(after_reason, '') = ? AND COALESCE(before_format, '') = ? AND COALESCE(after_format, '') = ? "
                        + "ORDER BY incident_id FETCH FIRST 1 ROWS ONLY", rs -> rs.getString(1), b.cause.modelId(), b.cause.tensorsDigest(),
                        blank(g.beforeDomain()), blank(g.afterDomain()), blank(g.beforeReason()), blank(g.afterReason()), blank(g.beforeFormat()),
                        blank(g.afterFormat())).orElse(null);
                wouldOpen.add(new WouldOpen(g.cause(), b.cause.modelId(), b.cause.fromRelease(), Cause.primary(b.cause.kinds()).name(),
                        b.cause.kinds().stream().map(Enum::name).sorted().toList(), List.copyOf(b.deployments), b.bytes, open));
            }
            wouldOpen.sort(Comparator.comparing((WouldOpen w) -> w.openIncident() != null).thenComparing(w -> -w.deployments().size())
                    .thenComparing(WouldOpen::modelId).thenComparing(WouldOpen::cause));
            return new Verdict(policy, latest.size(), replanned, wouldOpen);
        }
    }

    private static String blank(String text) {
        return text == null ? "" : text;
    }

    private static final class Builder {
        final Cause cause;
        final TreeSet<String> deployments = new TreeSet<>();
        long bytes;

        Builder(Cause cause) {
            this.cause = cause;
        }

        void add(String deployment, long moved) {
            if (deployments.add(deployment)) {
                bytes += moved;
            }
        }
    }
}
