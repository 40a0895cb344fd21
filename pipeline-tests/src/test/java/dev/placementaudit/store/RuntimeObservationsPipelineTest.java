package dev.placementaudit.store;

import dev.placementaudit.core.placement.PlannerProfile;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.load.LoadedModel;
import dev.placementaudit.producer.load.ReferenceLoader;
import dev.placementaudit.producer.model.DeploymentTarget;
import dev.placementaudit.producer.model.FormPolicy;
import dev.placementaudit.producer.model.ModelFiles;
import dev.placementaudit.producer.model.ModelLoadedBuilder;
import dev.placementaudit.producer.model.Platforms;
import dev.placementaudit.producer.publish.PlacementEvents;
import dev.placementaudit.producer.sample.SampleModelFile;
import dev.placementaudit.producer.simulate.Drift;
import dev.placementaudit.producer.simulate.FleetSimulator;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.producer.simulate.ObservedRuntime;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.incidents.Incidents;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.pipeline.ResolverWorker;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What devices actually did, end to end through the real worker and store: a real model file loaded by the reference
 * loader as a JVM runtime embeds it, and a simulated observing fleet whose r2 leaks off-heap and whose runtime places
 * attention weights otherwise. Each cause is one incident across the fleet.
 */
@ExtendWith(KafkaBrokerExtension.class)
class RuntimeObservationsPipelineTest {
    @TempDir
    Path dir;

    @DatabaseTest
    void observationsAndRuntimeDecisionsFlowThroughWorkerAndStoreIntoIncidents(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        String input = KafkaBroker.uniqueTopic("model-loads");
        broker.createTopics(3, input);
        Map<String, String> worker = h.workerSettings(input);
        Map<String, String> store = h.settings();
        store.put("store.alerts.per.load", "false");
        store.put("store.loads.topic", input);

        // A real load of a real file (sample layout, sparse), measured by the loader, published as a runtime does.
        Path file = dir.resolve("qwen.gguf");
        SampleModelFile.write(ModelCatalog.byId("qwen2.5-0.5b-q8_0"), SampleModelFile.Format.GGUF, file);
        ModelLoaded planned = ModelLoadedBuilder.build(UUID.randomUUID(), Instant.parse("2026-11-01T08:00:00Z"), "qwen2.5-0.5b-q8_0",
                ModelFiles.read(file), new DeploymentTarget("jvm-real-1", "c1", "h1", "r1", "android", Platforms.byName("android")),
                new FormPolicy(PlannerProfile.EDGE, Platforms.kernels("all")), Map.of(), "test");
        // The simulated fleet: 8 deployments x 2 releases; r2 leaks 512 MB per load and copies attention weights off-heap.
        List<String> releases = List.of("r1", "r2");
        List<Drift> drift = List.of(Drift.parse("r2:leak=512MB", releases), Drift.parse("r2:diverge=*attn_q*", releases));
        ObservedRuntime runtime = new ObservedRuntime(drift, releases);

        try (ResolverWorker w = ResolverWorker.start(WorkerConfig.from(Settings.of(worker)), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
             AuditStore s = h.start(store);
             PlacementEvents events = PlacementEvents.connect(Map.of("bootstrap.servers", broker.bootstrapServers()), input, h.observations,
                     Duration.ofSeconds(15))) {
            try (LoadedModel loaded = new ReferenceLoader().load(file, planned, true)) {
                events.publish(loaded.reported());
                events.publishObservation(loaded.observation(Instant.now(), "test"));
            }
            int loads = 1;
            for (ModelLoaded load : new FleetSimulator(7, 8, releases, List.of(ModelCatalog.byId("qwen2.5-0.5b-q8_0")), drift,
                    Instant.parse("2026-11-01T00:00:00Z"))) {
                ObservedRuntime.Report report = runtime.report(load);
                events.publish(report.load());
                events.publishObservation(report.observation());
                loads++;
            }
            int expected = loads;
            await().atMost(Duration.ofSeconds(120)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == expected
                    && h.count("SELECT COUNT(*) FROM load_observations") == expected);
            await().atMost(Duration.ofSeconds(30)).until(() -> h.count("SELECT COUNT(*) FROM incidents WHERE state = 'OPEN'") >= 2);

            assertThat(h.count("SELECT COUNT(*) FROM runtime_findings WHERE deployment_id = 'jvm-real-1'"))
                    .as("the real load held what its plan said").isZero();
            assertThat(h.count("SELECT COUNT(*) FROM load_divergences l JOIN loads x ON x.load_id = l.load_id WHERE x.release_name = 'r1'"))
                    .isZero();
            List<Incidents.Incident> all;
            try (Connection c = db.dataSource().getConnection()) {
                all = Incidents.list(c, false, null, null);
            }
            Map<String, List<Incidents.Incident>> byKind = all.stream().collect(Collectors.groupingBy(Incidents.Incident::primaryKind));
            assertThat(byKind).as("%s", all).containsOnlyKeys("UNPLANNED_OFFHEAP", "DIVERGED", "MAPPING_NOT_OBSERVED");
            assertThat(all).allSatisfy(i -> {
                assertThat(i.state()).isEqualTo("OPEN");
                assertThat(i.toRelease()).isEqualTo("r2");
                assertThat(i.onRelease()).isEqualTo(8);
            });
            // One leak, one incident, every r2 deployment in it, each with the leak as its unplanned bytes, give or take what the
            // diverging runtime itself moved off or onto the heap.
            Incidents.Incident leak = byKind.get("UNPLANNED_OFFHEAP").get(0);
            assertThat(byKind.get("UNPLANNED_OFFHEAP")).hasSize(1);
            assertThat(leak.showing()).isEqualTo(8);
            assertThat(h.count("SELECT MIN(offheap_delta) FROM incident_deployments WHERE incident_id = '" + leak.incidentId() + "'"))
                    .isBetween(448L << 20, 512L << 20);
            assertThat(h.count("SELECT MAX(offheap_delta) FROM incident_deployments WHERE incident_id = '" + leak.incidentId() + "'"))
                    .isBetween(512L << 20, 768L << 20);
            // The diverging runtime is one incident per cause (what the reference decides, and why), as for regressions: the
            // fleet's phones map attention weights, its servers keep the small ones on the heap, its browsers cannot go off-heap.
            assertThat(byKind.get("DIVERGED")).hasSizeGreaterThanOrEqualTo(2).allSatisfy(i ->
                    assertThat(i.cause()).matches("the runtime put \\d+ tensors? in HOST_(OFFHEAP|HEAP) where the reference decides .*"));
            // Where the reference maps them (the phones and edge boxes), the copied weights are mapped bytes not seen mapped.
            assertThat(byKind.get("MAPPING_NOT_OBSERVED")).singleElement().satisfies(i -> assertThat(i.showing()).isEqualTo(4));
            assertThat(h.count("SELECT COUNT(DISTINCT deployment_id) FROM incident_deployments WHERE showing = TRUE AND incident_id IN ("
                    + byKind.get("DIVERGED").stream().map(i -> "'" + i.incidentId() + "'").collect(Collectors.joining(", ")) + ")"))
                    .as("every deployment on r2").isEqualTo(8);

            // What-if re-plans the recorded loads (which carry their runtimes' decisions) and writes nothing: what was observed
            // stays as it was recorded.
            long observations = h.count("SELECT COUNT(*) FROM load_observations");
            long findings = h.count("SELECT COUNT(*) FROM runtime_findings");
            CliRun whatIf = CliRun.run(CliRun.settings(h), "whatif", "--loads-topic", input, "--threshold", "1048576");
            assertThat(whatIf.exit()).as(whatIf.out() + whatIf.err()).isZero();
            assertThat(whatIf.out()).contains("had shipped:");
            assertThat(h.count("SELECT COUNT(*) FROM load_observations")).isEqualTo(observations);
            assertThat(h.count("SELECT COUNT(*) FROM runtime_findings")).isEqualTo(findings);
        }
    }
}
