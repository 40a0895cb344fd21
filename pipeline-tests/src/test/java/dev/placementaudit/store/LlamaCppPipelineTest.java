package dev.placementaudit.store;

import dev.placementaudit.core.format.GgmlType;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.RuntimeDecision;
import dev.placementaudit.events.RuntimeDomain;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.producer.llamacpp.LlamaCppAudit;
import dev.placementaudit.producer.llamacpp.LlamaCppEvents;
import dev.placementaudit.producer.llamacpp.LlamaCppRun;
import dev.placementaudit.producer.model.DeploymentTarget;
import dev.placementaudit.producer.model.ModelFiles;
import dev.placementaudit.producer.model.Platforms;
import dev.placementaudit.producer.publish.PlacementEvents;
import dev.placementaudit.producer.sample.TinyLlamaFile;
import dev.placementaudit.service.Settings;
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

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A real runtime through the whole audit: tiny llamas loaded by real llama.cpp (in child JVMs), published with llama.cpp
 * named as the runtime, planned by the worker under llama.cpp's rules and kept by the store. r1 ships Q8_0 and r2 the
 * Q4_0 requantisation: with mmap on, r2's matrices leave the file's pages for host memory (repacked for the CPU's kernel),
 * which {@code store diff} shows with llama.cpp's reason and the store raises as off-heap growth; with mmap off, every
 * weight was copied already and r2 only shrinks. What llama.cpp did agrees with the policy (no divergence), and a load
 * whose log places a weight otherwise is DIVERGED.
 */
@ExtendWith(KafkaBrokerExtension.class)
class LlamaCppPipelineTest {
    private static final Duration LOAD_TIMEOUT = Duration.ofMinutes(3);

    @TempDir
    Path dir;

    @DatabaseTest
    void aRequantisedReleaseLoadedByRealLlamaCppMovesItsMatricesOffTheMappingAndTheStoreSaysWhy(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        String input = KafkaBroker.uniqueTopic("model-loads");
        broker.createTopics(3, input);
        Map<String, String> store = h.settings();
        store.put("store.loads.topic", input);
        store.put("store.alerts.per.load", "false");
        store.put("store.http.port", "0");
        // The tiny model's matrices are a few MB: growth rules at that scale, as a fleet's are at gigabytes.
        store.put("store.rules.offheap.bytes", Long.toString(1L << 20));

        Path q8 = dir.resolve("tiny-q8_0.gguf");
        Path q4 = dir.resolve("tiny-q4_0.gguf");
        TinyLlamaFile.write(GgmlType.Q8_0, 7, q8);
        TinyLlamaFile.write(GgmlType.Q4_0, 7, q4);
        Map<String, LlamaCppAudit> audits = new HashMap<>();
        for (Path file : List.of(q8, q4)) {
            for (boolean mmap : List.of(true, false)) {
                audits.put(file.getFileName() + "/" + mmap, LlamaCppAudit.of(file, LlamaCppRun.load(file, mmap, 0, LOAD_TIMEOUT)));
            }
        }
        LlamaCppAudit repacking = audits.get("tiny-q4_0.gguf/true");
        assertThat(repacking.diverged()).as("llama.cpp did as its policy says: %s", repacking.divergences()).isFalse();
        assertThat(repacking.run().log().repacked()).as("this CPU's llama.cpp repacks Q4_0 matrices (AVX2 or NEON)").isNotEmpty();

        List<ModelLoaded> published = new ArrayList<>();
        try (ResolverWorker w = ResolverWorker.start(WorkerConfig.from(Settings.of(h.workerSettings(input))), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
             AuditStore s = h.start(store);
             PlacementEvents events = PlacementEvents.connect(Map.of("bootstrap.servers", broker.bootstrapServers()), input, h.observations,
                     Duration.ofSeconds(15))) {
            Instant at = Instant.parse("2026-12-01T08:00:00Z");
            for (String deployment : List.of("llama-a", "llama-b", "llama-c")) {
                boolean mmap = !deployment.equals("llama-c");
                for (String release : List.of("r1", "r2")) {
                    Path file = release.equals("r1") ? q8 : q4;
                    at = at.plusSeconds(60);
                    LlamaCppEvents.Events made = LlamaCppEvents.of(audits.get(file.getFileName() + "/" + mmap), ModelFiles.read(file),
                            new DeploymentTarget(deployment, "c1", deployment + "-host", release, "native", Platforms.byName("native")), "tiny-llama",
                            UUID.randomUUID(), at, Map.of(), "test");
                    events.publish(made.load());
                    events.publishObservation(made.observation());
                    published.add(made.load());
                }
            }
            // llama-a half way through a llama.cpp upgrade: the same r2 loaded again by a build the audit does not model yet.
            LlamaCppEvents.Events upgraded = LlamaCppEvents.of(repacking, ModelFiles.read(q4), new DeploymentTarget("llama-a", "c1", "llama-a-host", "r2",
                    "native", Platforms.byName("native")), "tiny-llama", UUID.randomUUID(), at.plusSeconds(30), Map.of(), "test");
            events.publish(ModelLoaded.newBuilder(upgraded.load()).setRuntime(dev.placementaudit.events.RuntimeIdentity.newBuilder(
                    upgraded.load().getRuntime()).setBuild("b5000").build()).build());
            events.publishObservation(upgraded.observation());
            published.add(upgraded.load());
            // A device whose llama.cpp kept output.weight in the file's pages, where this build's policy repacks it.
            LlamaCppEvents.Events odd = LlamaCppEvents.of(repacking, ModelFiles.read(q4), new DeploymentTarget("llama-d", "c1", "d-host", "r2",
                    "native", Platforms.byName("native")), "tiny-llama", UUID.randomUUID(), at.plusSeconds(60), Map.of(), "test");
            events.publish(keptMapped(odd.load(), "output.weight"));
            events.publishObservation(odd.observation());

            int expected = published.size() + 1;
            await().atMost(Duration.ofSeconds(120)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == expected
                    && h.count("SELECT COUNT(*) FROM load_observations") == expected);

            assertThat(h.count("SELECT COUNT(*) FROM load_divergences d JOIN loads l ON l.load_id = d.load_id WHERE l.deployment_id <> 'llama-d'"))
                    .as("llama.cpp placed every weight as the policy for its build and CPU says").isZero();
            assertThat(h.count("SELECT COUNT(*) FROM load_divergences d JOIN loads l ON l.load_id = d.load_id WHERE l.deployment_id = 'llama-d' "
                    + "AND d.tensor_name = 'output.weight'")).isEqualTo(1);

            String[] cli = CliRun.settings(h);
            CliRun diff = CliRun.run(cli, "diff", "--deployment", "llama-a", "--model", "tiny-llama", "--from", "r1", "--to", "r2", "--findings");
            assertThat(diff.exit()).as(diff.out() + diff.err()).isZero();
            assertThat(diff.out()).as(diff.out()).contains("MMAP_FILE", "HOST_OFFHEAP", "KERNEL_FEED_COPY", "repacked as", "llama.cpp b4916",
                    "blk.0.attn_q.weight").containsPattern("runtime llama.cpp b4916 [A-Z0-9_,]+ mmap -> llama.cpp b5000 [A-Z0-9_,]+ mmap");
            String r2 = h.string("SELECT load_id FROM loads WHERE deployment_id = 'llama-c' AND release_name = 'r2'");
            CliRun where = CliRun.run(cli, "where", "--load", r2);
            assertThat(where.out()).as(where.out()).containsPattern("runtime llama.cpp b4916 [A-Z0-9_,]+ no-mmap: planned under its rules")
                    .contains("model file mapped 0 B");
            // Two llama.cpp builds on one release: b5000 is planned by b4916's rules (the newest modelled), and says so.
            CliRun builds = CliRun.run(cli, "diff", "--deployment", "llama-a", "--model", "tiny-llama", "--from", "r2", "--to", "r2",
                    "--from-runtime", "llama.cpp b4916", "--to-runtime", "llama.cpp b5000", "--findings");
            assertThat(builds.exit()).as(builds.out() + builds.err()).isZero();
            assertThat(builds.out()).as(builds.out()).containsPattern("runtime llama.cpp b4916 \\S+ mmap -> llama.cpp b5000 \\S+ mmap")
                    .contains("0 root causes");
            String b5000 = h.string("SELECT load_id FROM loads WHERE runtime LIKE 'llama.cpp b5000%'");
            assertThat(CliRun.run(cli, "where", "--load", b5000).out()).contains("runtime llama.cpp b5000");
            assertThat(h.string("SELECT reason FROM load_tensors WHERE load_id = '" + b5000 + "' AND tensor_name = 'output.weight'"))
                    .contains("llama.cpp b4916 rules (the load's build b5000 is not modelled; the newest that is)");
            // The same two builds through the API the dashboard reads.
            String api = "http://127.0.0.1:" + s.port() + "/api/diff?deployment=llama-a&model=tiny-llama&from=r2&to=r2";
            JsonNode byBuild = get(api + "&fromRuntime=llama.cpp%20b4916&toRuntime=llama.cpp%20b5000", 200);
            assertThat(byBuild.get("from").get("runtime").asText()).startsWith("llama.cpp b4916");
            assertThat(byBuild.get("to").get("runtime").asText()).startsWith("llama.cpp b5000");
            assertThat(byBuild.get("causes")).isEmpty();
            assertThat(get(api + "&fromRuntime=llama.cpp%20b4916&toRuntime=llama.cpp%20b9999", 404).get("error").asText())
                    .contains("no complete load");
            // Taken as written: an underscore is no wildcard, and what no runtime can be named is refused before any SQL.
            get(api + "&fromRuntime=llama.cpp_b4916", 404);
            assertThat(get(api + "&toRuntime=b5000%27%3B", 400).get("error").asText()).contains("'toRuntime'");
            CliRun none = CliRun.run(cli, "diff", "--deployment", "llama-a", "--model", "tiny-llama", "--from", "r2", "--to", "r2",
                    "--from-runtime", "llama.cpp b4916", "--to-runtime", "llama.cpp b9999");
            assertThat(none.exit()).isNotZero();
            assertThat(none.err()).contains("no complete load of tiny-llama on llama-a for r2 (runtime llama.cpp b4916...) and r2 (runtime "
                    + "llama.cpp b9999...)");
            CliRun copied = CliRun.run(cli, "diff", "--deployment", "llama-c", "--model", "tiny-llama", "--from", "r1", "--to", "r2", "--findings");
            assertThat(copied.exit()).as(copied.out() + copied.err()).isZero();
            assertThat(copied.out()).as(copied.out()).contains("mapped 0 B -> 0 B").doesNotContain("KERNEL_FEED_COPY");

            // Before moving the fleet to CPUs without AVX2: the Q4_0 matrices that are repacked today would stay in the file's
            // pages (15 on each of the four r2 loads that map); on ARM with int8 matmul they are repacked too (another
            // layout, the same domain): nothing moves.
            CliRun sse = CliRun.run(cli, "whatif", "--loads-topic", input, "--model", "tiny-llama", "--cpu", "x86-sse");
            assertThat(sse.exit()).as(sse.out() + sse.err()).isZero();
            assertThat(sse.out()).as(sse.out()).contains("if llama.cpp on x86-sse had shipped: 60 of ").containsPattern("HOST_OFFHEAP -> MMAP_FILE");
            CliRun arm = CliRun.run(cli, "whatif", "--loads-topic", input, "--model", "tiny-llama", "--cpu", "arm-i8mm");
            assertThat(arm.out()).as(arm.out()).contains("if llama.cpp on arm-i8mm had shipped: 0 of ");
            CliRun noMmap = CliRun.run(cli, "whatif", "--loads-topic", input, "--model", "tiny-llama", "--deployment", "llama-a", "--no-mmap");
            assertThat(noMmap.out()).as(noMmap.out()).containsPattern("MMAP_FILE -> HOST_OFFHEAP")
                    .containsPattern("llama-a +3 loads .* changed .* off-heap \\+[0-9.]+ [KM]B, mapped -[0-9.]+ [KM]B\\n").doesNotContain("MMAP_FILE=");
            CliRun z80 = CliRun.run(cli, "whatif", "--loads-topic", input, "--cpu", "z80");
            assertThat(z80.exit()).isEqualTo(2);
            assertThat(z80.err()).contains("no CPU named 'z80'");

            // One incident per cause: the repacked matrices on both deployments that map, and the one device that diverged;
            // the release gate holds r2 back.
            await().atMost(Duration.ofSeconds(30)).until(() -> h.count("SELECT COUNT(*) FROM incidents WHERE to_release = 'r2' AND state = 'OPEN'") == 2
                    && h.count("SELECT COUNT(*) FROM incident_deployments d JOIN incidents i ON i.incident_id = d.incident_id "
                    + "WHERE i.primary_kind = 'LOST_MAPPING' AND d.showing = TRUE") == 2);
            CliRun gate = CliRun.run(cli, "gate", "--release", "r2", "--model", "tiny-llama");
            assertThat(gate.exit()).as(gate.out() + gate.err()).isNotZero();
            assertThat(gate.out()).contains("BLOCKED by 2 incident(s)").containsPattern("tiny-llama r1 -> r2 +LOST_MAPPING +2 of 4 deployments")
                    .containsPattern("DIVERGED +1 of 4 deployments");
        }
    }

    private static JsonNode get(String url, int status) throws Exception {
        HttpResponse<String> response = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as("%s: %s", url, response.body()).isEqualTo(status);
        return new ObjectMapper().readTree(response.body());
    }

    /** The load as a llama.cpp that did not repack {@code name} reports it: the weight in the file's pages. */
    private static ModelLoaded keptMapped(ModelLoaded load, String name) {
        List<TensorInfo> tensors = new ArrayList<>();
        for (TensorInfo t : load.getTensors()) {
            tensors.add(!t.getName().equals(name) ? t : TensorInfo.newBuilder(t).setRuntime(RuntimeDecision.newBuilder()
                    .setDomain(RuntimeDomain.MMAP_FILE).setResidentBytes(t.getStoredBytes()).setReason("CPU_Mapped").build()).build());
        }
        return ModelLoaded.newBuilder(load).setTensors(tensors).build();
    }
}
