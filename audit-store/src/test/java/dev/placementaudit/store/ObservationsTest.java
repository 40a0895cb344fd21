package dev.placementaudit.store;

import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.RuntimeDecision;
import dev.placementaudit.events.RuntimeDomain;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.resolution.ResolvedLoad;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.incidents.Incidents;
import dev.placementaudit.store.replay.ProjectionRebuild;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What runtimes did, beside what the reference planned (docs/observations.md): a leak, a mapping not made and a runtime
 * that places tensors otherwise each become an incident grouped like every other; an observation may come before its
 * load or never; a rebuild from the log writes the same.
 */
@ExtendWith(KafkaBrokerExtension.class)
class ObservationsTest {
    private static final long LEAK = 512L << 20;

    @DatabaseTest
    void aLeakAMissingMappingAndADivergingRuntimeAreIncidentsWhateverTheOrderTheirEventsCameIn(KafkaBroker broker, TestDatabase db)
            throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        Map<String, String> settings = h.settings();
        settings.put("store.alerts.per.load", "false");
        io.micrometer.prometheusmetrics.PrometheusMeterRegistry registry = new io.micrometer.prometheusmetrics.PrometheusMeterRegistry(
                io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT);
        try (AuditStore store = h.start(settings, registry)) {
            // r1: three deployments whose runtimes held what was planned.
            List<ResolvedLoad> r1 = h.publishAndWait(List.of(StoreHarness.load("a", "r1", 2, 0, false), StoreHarness.load("b", "r1", 2, 1, false),
                    StoreHarness.load("c", "r1", 2, 2, false)));
            for (ResolvedLoad r : r1) {
                h.publishObservation(StoreHarness.observation(r.summary(), 0, true));
            }
            // Bytes that are no observation, and an observation no column could hold: dead-lettered with their reasons.
            h.publishRaw(h.observations, "not an observation".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            h.publishObservation(dev.placementaudit.events.LoadObserved.newBuilder(StoreHarness.observation(r1.get(0).summary(), 0, true))
                    .setDeploymentId("d".repeat(300)).build());
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM load_observations") == 3
                    && h.count("SELECT COUNT(*) FROM dead_letters WHERE source_topic = '" + h.observations + "'") == 2);
            assertThat(h.count("SELECT COUNT(*) FROM dead_letters WHERE source_topic = '" + h.observations + "' AND reason = 'UNDECODABLE'"))
                    .isEqualTo(1);
            assertThat(h.count("SELECT COUNT(*) FROM dead_letters WHERE source_topic = '" + h.observations + "' AND reason = 'UNSTORABLE' "
                    + "AND load_id IS NULL")).as("an observation set aside does not mark its load as never to complete").isEqualTo(1);
            assertThat(h.count("SELECT COUNT(*) FROM runtime_findings")).as("held as planned").isZero();

            // r2: a leaks 512 MB off-heap; b leaks too, and its observation comes before its load; c's mapping was not made;
            // d's runtime copies a mapped weight off-heap; f reports nothing but its load.
            ModelLoaded bLoad = StoreHarness.load("b", "r2", 2, 11, false);
            ResolvedLoad bResolved = h.resolve(bLoad);
            h.publishObservation(StoreHarness.observation(bResolved.summary(), LEAK, true));
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM load_observations") == 4);
            assertThat(h.count("SELECT COUNT(*) FROM runtime_findings")).as("an observation waits for its load").isZero();
            List<ResolvedLoad> r2 = h.publishAndWait(List.of(StoreHarness.load("a", "r2", 2, 10, false), bLoad,
                    StoreHarness.load("c", "r2", 2, 12, false), diverging(StoreHarness.load("d", "r2", 2, 13, false)),
                    StoreHarness.load("f", "r2", 2, 14, false)));
            h.publishObservation(StoreHarness.observation(r2.get(0).summary(), LEAK, true));
            h.publishObservation(StoreHarness.observation(r2.get(2).summary(), 0, false));
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM runtime_findings") == 4);

            Map<String, Incidents.Incident> byKind = incidents(db);
            assertThat(byKind).containsOnlyKeys("UNPLANNED_OFFHEAP", "MAPPING_NOT_OBSERVED", "DIVERGED");
            Incidents.Incident leak = byKind.get("UNPLANNED_OFFHEAP");
            assertThat(leak.incidentId()).matches("inc-r[0-9a-f]{15}");
            assertThat(leak.state()).isEqualTo("OPEN");
            assertThat(leak.showing()).as("a and b").isEqualTo(2);
            assertThat(leak.toRelease()).isEqualTo("r2");
            assertThat(leak.onRelease()).as("a, b, c, d and f are on r2").isEqualTo(5);
            assertThat(h.count("SELECT offheap_delta FROM incident_deployments WHERE deployment_id = 'a' AND incident_id = '" + leak.incidentId() + "'"))
                    .as("the unplanned bytes").isEqualTo(LEAK);
            assertThat(byKind.get("MAPPING_NOT_OBSERVED").showing()).isEqualTo(1);
            Incidents.Incident diverged = byKind.get("DIVERGED");
            assertThat(diverged.showing()).isEqualTo(1);
            assertThat(diverged.tensorCount()).isEqualTo(1);
            assertThat(diverged.cause()).contains("HOST_OFFHEAP where the reference decides MMAP_FILE (MAPPED_OK)");
            assertThat(h.count("SELECT COUNT(*) FROM load_divergences")).isEqualTo(1);
            assertThat(h.count("SELECT COUNT(*) FROM loads WHERE deployment_id = 'f' AND complete = TRUE"))
                    .as("a load without an observation is complete all the same").isEqualTo(1);

            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(registry.scrape())
                    .contains("pa_store_observed_unplanned_bytes{deployment=\"a\",domain=\"offheap\",model=\"sample-model\"} " + (double) LEAK)
                    .contains("pa_store_observed_unplanned_bytes{deployment=\"c\",domain=\"mapped\",model=\"sample-model\"} -1187840.0")
                    .contains("pa_store_observed_unplanned_bytes{deployment=\"b\",domain=\"heap\",model=\"sample-model\"} 0.0"));
            String[] cli = CliRun.settings(h);
            CliRun leaking = CliRun.run(cli, "where", "--load", r2.get(0).summary().getLoadId().toString());
            assertThat(leaking.exit()).as(leaking.err()).isZero();
            assertThat(leaking.out()).contains("observed by the runtime at 2026-11-01T10:00:05Z (test):")
                    .containsPattern("off-heap +512 KB +512 MB +512 MB")
                    .contains("finding UNPLANNED_OFFHEAP (" + leak.incidentId() + "): 512 MB off-heap the plan does not account for");
            CliRun divergent = CliRun.run(cli, "where", "--load", r2.get(3).summary().getLoadId().toString());
            assertThat(divergent.out()).contains("observed: nothing reported by the runtime (yet)")
                    .contains("the runtime placed 1 tensor(s) otherwise than the reference:")
                    .containsPattern("blk\\.0\\.attn_q\\.weight +runtime HOST_OFFHEAP 576 KB, reference MMAP_FILE 576 KB \\(MAPPED_OK\\)")
                    .contains("finding DIVERGED (" + diverged.incidentId() + ")");

            // A runtime's incident reads as planned against observed on one release, with no null and no empty tensor list (issue 56).
            CliRun leakIncident = CliRun.run(cli, "incident", leak.incidentId());
            assertThat(leakIncident.exit()).as(leakIncident.err()).isZero();
            assertThat(leakIncident.out()).contains(" on r2  UNPLANNED_OFFHEAP").doesNotContain("r2 -> r2").doesNotContain("null")
                    .contains("    planned:  off-heap, planned").contains("    observed: off-heap, observed")
                    .contains("tensors: none named (the runtime measured bytes per domain, not tensors)").doesNotContain("tensors (0)");
            CliRun divergedIncident = CliRun.run(cli, "incident", diverged.incidentId());
            assertThat(divergedIncident.out()).contains("tensors (1):").contains("    planned:  mapped");

            CliRun fleet = CliRun.run(cli, "fleet", "--release", "r2");
            assertThat(fleet.exit()).as(fleet.err()).isZero();
            assertThat(fleet.out()).contains("observed by their runtimes: 3 of 5 heads; off-heap planned 1 MB, observed 1.0 GB")
                    .containsPattern("a +sample-model .* off-heap +512 KB \\(observed 512 MB\\)");
            CliRun history = CliRun.run(cli, "where", "--deployment", "a", "--format", "json");
            assertThat(history.out()).contains("\"observedOffHeapBytes\" : " + (LEAK + 524_288)).contains("\"observedOffHeapBytes\" : 524288");

            // r3 on a, held as planned: a leaves the leak; b still shows it.
            List<ResolvedLoad> r3 = h.publishAndWait(List.of(StoreHarness.load("a", "r3", 2, 20, false)));
            h.publishObservation(StoreHarness.observation(r3.get(0).summary(), 0, true));
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM incident_deployments WHERE deployment_id = 'a' "
                    + "AND showing = FALSE") == 1);
            assertThat(incidents(db).get("UNPLANNED_OFFHEAP").showing()).isEqualTo(1);
            assertThat(h.count("SELECT COUNT(*) FROM load_observations")).isEqualTo(7);
        }
        StringWriter out = new StringWriter();
        ProjectionRebuild.Result rebuilt = new ProjectionRebuild(StoreConfig.from(Settings.of(h.settings())), new PrintWriter(out, true))
                .run(Long.MAX_VALUE, false, false);
        assertThat(rebuilt.live().get("runtime_findings")).startsWith("4 rows ");
        assertThat(rebuilt.live().get("load_observations")).startsWith("7 rows ");
        assertThat(rebuilt.equal()).as("%s%n%s", rebuilt.live(), rebuilt.rebuilt()).isTrue();
    }

    /** The load as reported by a runtime that holds its first mapped weight off-heap (the rest as the reference decides). */
    private static ModelLoaded diverging(ModelLoaded load) {
        List<TensorInfo> tensors = new ArrayList<>();
        for (TensorInfo t : load.getTensors()) {
            boolean embedding = t.getName().equals("token_embd.weight");
            boolean copied = t.getName().equals("blk.0.attn_q.weight");
            tensors.add(TensorInfo.newBuilder(t).setRuntime(RuntimeDecision.newBuilder()
                    .setDomain(embedding || copied ? RuntimeDomain.HOST_OFFHEAP : RuntimeDomain.MMAP_FILE)
                    .setResidentBytes(embedding ? 524_288 : t.getStoredBytes()).build()).build());
        }
        return ModelLoaded.newBuilder(load).setTensors(tensors).build();
    }



    private static Map<String, Incidents.Incident> incidents(TestDatabase db) throws Exception {
        try (Connection c = db.dataSource().getConnection()) {
            return Incidents.list(c, false, null, null).stream().collect(Collectors.toMap(Incidents.Incident::primaryKind, i -> i));
        }
    }

    /**
     * An observation is the deployment's it names (issue 56): one that names another deployment than its load's is
     * dead-lettered with its reason and counted, draws no finding, and never shuts out the load's own observation,
     * whether it comes after the load (set aside at once) or before it (kept beside the true one, set aside when the load
     * completes).
     */
    @DatabaseTest
    void anObservationOfAnotherDeploymentsLoadIsDeadLetteredAndNeverAttachesWhateverItsOrder(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        Map<String, String> settings = h.settings();
        settings.put("store.alerts.per.load", "false");
        io.micrometer.prometheusmetrics.PrometheusMeterRegistry registry = new io.micrometer.prometheusmetrics.PrometheusMeterRegistry(
                io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT);
        try (AuditStore store = h.start(settings, registry)) {
            // After: victim's load is stored, then a device of "mallory" reports a leak under victim's load id.
            List<ResolvedLoad> stored = h.publishAndWait(List.of(StoreHarness.load("victim", "r1", 2, 0, false)));
            LoadObserved forged = LoadObserved.newBuilder(StoreHarness.observation(stored.get(0).summary(), LEAK, true)).setDeploymentId("mallory").build();
            h.publishObservation(forged);
            h.publishObservation(StoreHarness.observation(stored.get(0).summary(), 0, true));
            // Before: a forged observation of a load not stored yet comes first, the load and its own observation after it.
            ModelLoaded later = StoreHarness.load("victim-2", "r1", 2, 1, false);
            ResolvedLoad laterResolved = h.resolve(later);
            h.publishObservation(LoadObserved.newBuilder(StoreHarness.observation(laterResolved.summary(), LEAK, false)).setDeploymentId("mallory").build());
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM load_observations") == 2);
            h.publishObservation(StoreHarness.observation(laterResolved.summary(), 0, true));
            h.publishAndWait(List.of(later));

            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM dead_letters WHERE detail = 'DEPLOYMENT_MISMATCH'") == 2
                    && h.count("SELECT COUNT(*) FROM load_observations") == 2);
            assertThat(h.count("SELECT COUNT(*) FROM load_observations WHERE deployment_id = 'mallory'")).isZero();
            assertThat(h.count("SELECT COUNT(*) FROM dead_letters WHERE detail = 'DEPLOYMENT_MISMATCH' AND reason = 'INVALID_CONTENT' AND source_topic = '"
                    + h.observations + "' AND load_id IN ('" + stored.get(0).summary().getLoadId() + "', '" + laterResolved.summary().getLoadId() + "')"))
                    .as("each with its load and where it was on the topic").isEqualTo(2);
            assertThat(h.count("SELECT COUNT(*) FROM runtime_findings")).as("a forged leak is no finding").isZero();
            assertThat(h.count("SELECT COUNT(*) FROM incidents")).isZero();
            assertThat(h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE")).isEqualTo(2);
            // The one set aside at once went to the dead-letter topic too, with why.
            var letters = dev.placementaudit.testkit.TopicReader.readCommitted(broker, h.decisions + ".dlq", 1);
            assertThat(letters).anySatisfy(letter -> assertThat(new String(letter.headers().lastHeader(dev.placementaudit.service.DeadLetter.ERROR).value(),
                    java.nio.charset.StandardCharsets.UTF_8)).contains("names deployment mallory, but the load is victim's"));
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(registry.scrape())
                    .contains("pa_store_dlq_total{reason=\"INVALID_CONTENT\"} 2.0"));
            CliRun where = CliRun.run(CliRun.settings(h), "where", "--load", stored.get(0).summary().getLoadId().toString());
            assertThat(where.out()).as(where.out()).containsPattern("off-heap .* 0 B").doesNotContain("UNPLANNED_OFFHEAP");
        }
    }
}
