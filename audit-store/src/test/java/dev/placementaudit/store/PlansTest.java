package dev.placementaudit.store;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.schemas.PlanDigest;
import dev.placementaudit.store.chain.ChainVerifier;
import dev.placementaudit.store.query.LoadQueries;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.resolution.ResolvedLoad;
import org.junit.jupiter.api.extension.ExtendWith;

import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Placement plans as the store keeps them: one per distinct plan however many loads name it, built at once from a
 * load whose decisions all came in one batch, from staged decisions when they did not, and computed by the store for
 * events written before workers named plans - always the digest the worker would have named.
 */
@ExtendWith(KafkaBrokerExtension.class)
class PlansTest {

    @DatabaseTest
    void everyPathToAPlanEndsAtTheDigestTheWorkerNames(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        List<ModelLoaded> current = new ArrayList<>();
        List<ModelLoaded> legacy = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            current.add(StoreHarness.load("edge-" + i, "r1", 2, i, false));
            legacy.add(StoreHarness.load("old-" + i, "r1", 2, i, i % 2 == 1));
        }
        List<ResolvedLoad> resolved = h.publish(current);
        // Events as a worker before plans wrote them: no digest on the decisions or the summary.
        List<ResolvedLoad> legacyResolved = new ArrayList<>();
        for (ModelLoaded load : legacy) {
            ResolvedLoad r = h.resolve(load);
            legacyResolved.add(r);
            for (AllocationDecided d : r.decisions()) {
                h.publishRaw(h.decisions, StoreHarness.DECISIONS.encode(AllocationDecided.newBuilder(d).setPlanDigest(null).build()));
            }
            h.publishRaw(h.resolved, StoreHarness.SUMMARIES.encode(LoadResolved.newBuilder(r.summary()).setPlanDigest(null).build()));
        }

        Map<String, String> settings = h.settings();
        // Two records a batch: no load is whole in one, so every plan here is built from staged decisions.
        settings.put("store.max.poll.records", "2");
        try (AuditStore store = h.start(settings)) {
            await().atMost(Duration.ofSeconds(90)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 8);

            String plain = resolved.get(0).summary().getPlanDigest();
            String dequantized = legacyResolved.get(1).summary().getPlanDigest();
            assertThat(plain).isNotEqualTo(dequantized);
            // Two plans for eight loads: the plain one (every current load, two legacy ones) and the dequantized one.
            assertThat(h.count("SELECT COUNT(*) FROM plans")).isEqualTo(2);
            assertThat(h.count("SELECT COUNT(*) FROM plan_tensors")).isEqualTo(2 * 4);
            assertThat(h.count("SELECT COUNT(*) FROM loads WHERE plan_digest = '" + plain + "'")).isEqualTo(6);
            assertThat(h.count("SELECT COUNT(*) FROM loads WHERE plan_digest = '" + dequantized + "'")).isEqualTo(2);
            assertThat(h.count("SELECT COUNT(*) FROM decisions")).as("nothing left staged").isZero();
            // What the store computed for the legacy loads is what the worker names now, and what their decisions make.
            assertThat(PlanDigest.of(legacyResolved.get(1).decisions())).isEqualTo(dequantized);

            for (ResolvedLoad r : List.of(resolved.get(2), legacyResolved.get(3))) {
                LoadQueries.LoadDetail detail = store.queries().load(r.summary().getLoadId().toString()).orElseThrow();
                assertThat(detail.tensors()).extracting(LoadQueries.TensorRow::name)
                        .containsExactlyElementsOf(r.decisions().stream().map(AllocationDecided::getTensorName).toList());
                assertThat(detail.tensors()).extracting(LoadQueries.TensorRow::domain)
                        .containsExactlyElementsOf(r.decisions().stream().map(d -> d.getDomain().name()).toList());
            }
            try (Connection c = db.dataSource().getConnection()) {
                ChainVerifier.Report report = ChainVerifier.verify(c, Optional.empty(), Optional.empty());
                assertThat(report.breaks()).isEmpty();
                assertThat(report.entries()).isEqualTo(8);
            }
        }
    }

    /**
     * A new plan's tensors go in by COPY on PostgreSQL: text holding the characters COPY's text format would have to
     * escape (tab, newline, carriage return, backslash, and a "\N" that means NULL there) comes back exactly as it came,
     * and digests to the plan it names.
     */
    @DatabaseTest
    void textThatCopyMustEscapeComesBackAsItCame(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        ResolvedLoad r = h.resolve(StoreHarness.load("edge-odd", "r1", 2, 0, false));
        String odd = " tab\there, newline\nthere, return\rand a back\\slash \\N";
        List<AllocationDecided> decisions = new ArrayList<>();
        for (AllocationDecided d : r.decisions()) {
            decisions.add(AllocationDecided.newBuilder(d).setTensorName(d.getTensorName() + odd).setReason(d.getReason() + odd).build());
        }
        String digest = PlanDigest.of(decisions);
        for (AllocationDecided d : decisions) {
            h.publishRaw(h.decisions, StoreHarness.DECISIONS.encode(AllocationDecided.newBuilder(d).setPlanDigest(digest).build()));
        }
        h.publishRaw(h.resolved, StoreHarness.SUMMARIES.encode(LoadResolved.newBuilder(r.summary()).setPlanDigest(digest).build()));
        io.micrometer.prometheusmetrics.PrometheusMeterRegistry registry = new io.micrometer.prometheusmetrics.PrometheusMeterRegistry(
                io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT);
        try (AuditStore store = h.start(h.settings(), registry)) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 1);
            assertThat(registry.get("pa.store.decisions.staged").counter().count()).as("the plan built as its decisions came, not staged")
                    .isZero();
            LoadQueries.LoadDetail detail = store.queries().load(r.summary().getLoadId().toString()).orElseThrow();
            assertThat(detail.load().planDigest()).isEqualTo(digest);
            assertThat(detail.tensors()).extracting(LoadQueries.TensorRow::name)
                    .containsExactlyElementsOf(decisions.stream().map(AllocationDecided::getTensorName).toList());
            assertThat(detail.tensors()).extracting(LoadQueries.TensorRow::reason)
                    .containsExactlyElementsOf(decisions.stream().map(AllocationDecided::getReason).toList());
            try (Connection c = db.dataSource().getConnection()) {
                assertThat(ChainVerifier.verify(c, Optional.empty(), Optional.empty()).breaks()).as("the stored rows digest to the plan").isEmpty();
            }
        }
    }

    /**
     * A load's decisions that name a plan they do not make: a stored plan (one tensor's reason differs) or a digest no
     * plan has. Neither is taken for the plan it names, wherever it is checked (as it is decoded, or as it is written):
     * each load is stored with the plan its decisions make, and the stored rows digest to it.
     */
    @DatabaseTest
    void decisionsThatDoNotMakeThePlanTheyNameAreStoredWithThePlanTheyMake(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        ResolvedLoad honest = h.resolve(StoreHarness.load("edge-honest", "r1", 2, 0, false));
        String stored = PlanDigest.of(honest.decisions());
        publish(h, honest, honest.decisions(), stored);
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 1);
        }
        // Named after the stored plan, one reason changed; and named after a plan nobody has, one more tensor off-heap.
        ResolvedLoad similar = h.resolve(StoreHarness.load("edge-similar", "r1", 2, 1, false));
        List<AllocationDecided> changed = new ArrayList<>(similar.decisions());
        changed.set(3, AllocationDecided.newBuilder(changed.get(3)).setReason(changed.get(3).getReason() + " (not what the plan says)").build());
        ResolvedLoad other = h.resolve(StoreHarness.load("edge-other", "r1", 3, 2, false));
        String nobodys = "ab".repeat(32);
        publish(h, similar, changed, stored);
        publish(h, other, other.decisions(), nobodys);
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 3);
            for (Map.Entry<ResolvedLoad, List<AllocationDecided>> load : Map.of(similar, changed, other, other.decisions()).entrySet()) {
                LoadQueries.LoadDetail detail = store.queries().load(load.getKey().summary().getLoadId().toString()).orElseThrow();
                assertThat(detail.load().planDigest()).as("the plan its decisions make").isEqualTo(PlanDigest.of(load.getValue()))
                        .isNotIn(stored, nobodys);
                assertThat(detail.tensors()).extracting(LoadQueries.TensorRow::reason)
                        .containsExactlyElementsOf(load.getValue().stream().map(AllocationDecided::getReason).toList());
            }
            assertThat(h.count("SELECT COUNT(*) FROM plans WHERE plan_digest = '" + nobodys + "'")).isZero();
            try (Connection c = db.dataSource().getConnection()) {
                assertThat(ChainVerifier.verify(c, Optional.empty(), Optional.empty()).breaks()).as("the stored rows digest to each plan").isEmpty();
            }
        }
    }

    /** A load's decisions, each naming {@code digest}, then its summary naming it too. */
    private static void publish(StoreHarness h, ResolvedLoad load, List<AllocationDecided> decisions, String digest) throws Exception {
        for (AllocationDecided d : decisions) {
            h.publishRaw(h.decisions, StoreHarness.DECISIONS.encode(AllocationDecided.newBuilder(d).setPlanDigest(digest).build()));
        }
        h.publishRaw(h.resolved, StoreHarness.SUMMARIES.encode(LoadResolved.newBuilder(load.summary()).setPlanDigest(digest).build()));
    }

    @DatabaseTest
    void aFleetThatRepeatsItsPlanWritesOneRowPerLoad(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        List<ModelLoaded> first = List.of(StoreHarness.load("edge-0", "r1", 3, 0, false));
        h.publish(first);
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 1);
        }
        List<ModelLoaded> fleet = new ArrayList<>();
        for (int i = 1; i <= 40; i++) {
            fleet.add(StoreHarness.load("edge-" + i, "r1", 3, i, false));
        }
        h.publish(fleet);
        io.micrometer.prometheusmetrics.PrometheusMeterRegistry registry = new io.micrometer.prometheusmetrics.PrometheusMeterRegistry(
                io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT);
        try (AuditStore store = h.start(h.settings(), registry)) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 41);
            // The plan was stored by the first load; the forty after it each wrote their load row and nothing else.
            assertThat(h.count("SELECT COUNT(*) FROM plans")).isEqualTo(1);
            assertThat(h.count("SELECT COUNT(*) FROM plan_tensors")).isEqualTo(5);
            assertThat(h.count("SELECT COUNT(*) FROM decisions")).isZero();
            assertThat(h.count("SELECT COUNT(*) FROM load_tensors")).isEqualTo(41 * 5);
            assertThat(h.count("SELECT SUM(next_offset) FROM ingest_offsets")).isEqualTo(41 * 5 + 41);
            StoreHarness.assertReleaseHeads(h);
            assertThat(registry.get("pa.store.decisions").counter().count()).isEqualTo(40 * 5);
            assertThat(registry.get("pa.store.decisions.staged").counter().count()).as("no decision row written, even for a while").isZero();
            assertThat(registry.get("pa.store.plan.tensor.rows").counter().count()).isZero();
        }
    }
}
