package dev.placementaudit.worker.pipeline;

import dev.placementaudit.service.DeadLetter;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.MemoryDomain;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ReasonCode;
import dev.placementaudit.events.RuntimeDecision;
import dev.placementaudit.events.RuntimeDomain;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.SampleEvents;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.extension.ExtendWith;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

@ExtendWith(KafkaBrokerExtension.class)
class ResolverWorkerTest {

    @Test
    void resolvesEveryTensorOfEveryLoadExactlyOnce(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 3);
        List<ModelLoaded> loads = IntStream.range(0, 12).mapToObj(i -> SampleEvents.edgeLoad("d" + (i % 6), "r" + (i / 6), 3)).toList();
        List<RecordMetadata> written = h.send(loads);

        try (ResolverWorker worker = h.start("w1")) {
            List<LoadResolved> summaries = h.resolved(12);
            List<AllocationDecided> decisions = h.decisions(60);

            assertThat(summaries).hasSize(12).extracting(LoadResolved::getLoadId)
                    .containsExactlyInAnyOrderElementsOf(loads.stream().map(ModelLoaded::getLoadId).toList());
            assertThat(decisions).hasSize(60).extracting(AllocationDecided::getDecisionId).doesNotHaveDuplicates();
            Map<String, List<AllocationDecided>> byLoad = decisions.stream().collect(Collectors.groupingBy(AllocationDecided::getLoadId));
            for (int i = 0; i < loads.size(); i++) {
                ModelLoaded load = loads.get(i);
                List<AllocationDecided> mine = byLoad.get(load.getLoadId().toString());
                assertThat(mine).extracting(AllocationDecided::getTensorName)
                        .containsExactlyInAnyOrderElementsOf(load.getTensors().stream().map(TensorInfo::getName).toList());
                Map<String, AllocationDecided> byTensor = mine.stream().collect(Collectors.toMap(AllocationDecided::getTensorName, Function.identity()));
                assertThat(byTensor.get("token_embd.weight").getDomain()).isEqualTo(MemoryDomain.HOST_OFFHEAP);
                assertThat(byTensor.get("token_embd.weight").getReasonCode()).isEqualTo(ReasonCode.ENCODING_NOT_MAPPABLE);
                assertThat(byTensor.get("blk.2.attn_q.weight").getDomain()).isEqualTo(MemoryDomain.MMAP_FILE);
                assertThat(byTensor.get("output_norm.weight").getReasonCode()).isEqualTo(ReasonCode.MAPPED_OK);
                RecordMetadata source = written.get(i);
                assertThat(mine).allSatisfy(d -> {
                    assertThat(d.getSourceTopic()).isEqualTo(h.input);
                    assertThat(d.getSourcePartition()).isEqualTo(source.partition());
                    assertThat(d.getSourceOffset()).isEqualTo(source.offset());
                    assertThat(d.getDeploymentId()).isEqualTo(load.getDeployment().getId());
                });
            }
            assertThat(worker.health().up()).isTrue();
        }
    }

    /**
     * A deployment's decisions and summaries land in the order of its loads, which is what the store orders its history
     * by (ADR 6), whether commits overlap the next batch's sends on a second producer (the default) or not: twenty
     * batches of three loads of one deployment, back to back.
     */
    @ParameterizedTest(name = "worker.commit.overlap={0}")
    @ValueSource(booleans = {true, false})
    void aDeploymentsOutputsLandInTheOrderOfItsLoads(boolean overlap, KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 1);
        List<ModelLoaded> loads = IntStream.range(0, 60).mapToObj(i -> SampleEvents.edgeLoad("d0", "r" + i, 4)).toList();
        List<RecordMetadata> written = h.send(loads);
        Map<String, String> settings = h.settings("ordered");
        settings.put("worker.max.poll.records", "3");
        settings.put("worker.commit.overlap", Boolean.toString(overlap));

        try (ResolverWorker worker = h.start(settings)) {
            List<ConsumerRecord<byte[], byte[]>> summaries = h.resolvedRecords(60);
            List<AllocationDecided> decisions = h.decisions(60 * 6);

            assertThat(summaries).extracting(r -> WorkerHarness.RESOLVED.decode(r.value()).getLoadId())
                    .containsExactlyElementsOf(loads.stream().map(ModelLoaded::getLoadId).toList());
            assertThat(decisions).hasSize(60 * 6).extracting(AllocationDecided::getSourceOffset).isSorted();
            assertThat(decisions.get(decisions.size() - 1).getSourceOffset()).isEqualTo(written.get(59).offset());
            String second = "tx-" + h.input + "-ordered#2";
            try (Admin admin = Admin.create(broker.clientConfig())) {
                TransactionState state = admin.describeTransactions(List.of(second)).description(second).get(10, TimeUnit.SECONDS).state();
                // Overlapping, the second producer committed batches; not, it was only fenced at start (an earlier run's
                // open transaction aborted), and never used.
                assertThat(state).isEqualTo(overlap ? TransactionState.COMPLETE_COMMIT : TransactionState.EMPTY);
            }
        }
    }

    @Test
    void deadLettersPoisonRecordsWithTheirReasonWhileGoodLoadsFlow(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 1);
        ModelLoaded good = SampleEvents.edgeLoad("good", "r1", 1);
        byte[] goodBytes = WorkerHarness.LOADS.encode(good);
        byte[] unknownFingerprint = goodBytes.clone();
        unknownFingerprint[3] ^= 0x33;
        ModelLoaded tooBig = SampleEvents.edgeLoad("big", "r1", 3);
        List<byte[]> values = new ArrayList<>();
        values.add(goodBytes);
        values.add("definitely not avro".getBytes(StandardCharsets.UTF_8));
        values.add(unknownFingerprint);
        values.add(Arrays.copyOf(goodBytes, goodBytes.length / 2));
        values.add(WorkerHarness.DECISIONS.encode(sampleDecision()));
        values.add(WorkerHarness.LOADS.encode(SampleEvents.load("empty", "r1", List.of())));
        values.add(WorkerHarness.LOADS.encode(withTensor(good, 1, TensorInfo.newBuilder(good.getTensors().get(1)).setStoredBytes(-1).build())));
        values.add(WorkerHarness.LOADS.encode(withTensor(good, 2, good.getTensors().get(1))));
        values.add(WorkerHarness.LOADS.encode(withTensor(good, 1, TensorInfo.newBuilder(good.getTensors().get(1)).setShape(List.of(7L)).build())));
        values.add(WorkerHarness.LOADS.encode(withTensor(good, 1, TensorInfo.newBuilder(good.getTensors().get(1)).setEncoding("IQ9_ZZ").build())));
        values.add(WorkerHarness.LOADS.encode(tooBig));
        values.add(null);
        ModelLoaded alsoGood = SampleEvents.edgeLoad("good", "r2", 1);
        values.add(WorkerHarness.LOADS.encode(alsoGood));
        List<RecordMetadata> written = h.sendRaw(values);
        Map<String, String> settings = h.settings("w-poison");
        settings.put("worker.max.tensors.per.load", "4");

        try (ResolverWorker worker = h.start(settings)) {
            List<ConsumerRecord<byte[], byte[]>> dead = h.deadLetters(11);
            List<LoadResolved> summaries = h.resolved(2);

            assertThat(summaries).extracting(LoadResolved::getLoadId).containsExactly(good.getLoadId(), alsoGood.getLoadId());
            assertThat(h.decisions(6)).hasSize(6);
            assertThat(dead).hasSize(11);
            assertThat(dead).extracting(r -> WorkerHarness.header(r, DeadLetter.REASON) + "/" + WorkerHarness.header(r, DeadLetter.DETAIL))
                    .containsExactly(
                            "UNDECODABLE/NOT_SINGLE_OBJECT_ENCODED",
                            "UNDECODABLE/UNKNOWN_SCHEMA_FINGERPRINT",
                            "UNDECODABLE/CORRUPT_BODY",
                            "UNDECODABLE/WRONG_EVENT_TYPE",
                            "INVALID_CONTENT/EMPTY_LOAD",
                            "INVALID_CONTENT/NEGATIVE_SIZE",
                            "INVALID_CONTENT/DUPLICATE_TENSOR",
                            "INVALID_CONTENT/SHAPE_MISMATCH",
                            "INVALID_CONTENT/UNKNOWN_ENCODING",
                            "INVALID_CONTENT/TOO_MANY_TENSORS",
                            "UNDECODABLE/NOT_SINGLE_OBJECT_ENCODED");
            for (int i = 0; i < dead.size(); i++) {
                ConsumerRecord<byte[], byte[]> letter = dead.get(i);
                int sourceIndex = i + 1;
                assertThat(letter.value()).as("original bytes of record %d", sourceIndex).isEqualTo(values.get(sourceIndex));
                assertThat(WorkerHarness.header(letter, DeadLetter.SOURCE_OFFSET)).isEqualTo(Long.toString(written.get(sourceIndex).offset()));
                assertThat(WorkerHarness.header(letter, DeadLetter.SOURCE_TOPIC)).isEqualTo(h.input);
                assertThat(WorkerHarness.header(letter, DeadLetter.ERROR)).isNotBlank();
            }
            assertThat(WorkerHarness.header(dead.get(8), DeadLetter.FIELD)).isEqualTo("tensors[1] 'blk.0.attn_q.weight'.encoding");
            assertThat(WorkerHarness.header(dead.get(8), DeadLetter.ERROR)).contains("'IQ9_ZZ'");
            assertThat(worker.health().up()).isTrue();
        }
    }

    /**
     * A load id stands for one load (issue 56): the same load sent again is resolved again (the store keeps one copy), but
     * another load under an id the worker resolved lately is dead-lettered as a conflict, with what differs, and never
     * resolved: its decisions would reach the store under the first load's id.
     */
    @Test
    void aLoadIdThatComesAgainWithOtherContentIsDeadLetteredAsAConflict(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 1);
        ModelLoaded first = SampleEvents.edgeLoad("edge-7", "r1", 1);
        ModelLoaded impostor = ModelLoaded.newBuilder(SampleEvents.edgeLoad("edge-9", "r2", 2)).setLoadId(first.getLoadId()).build();
        ModelLoaded next = SampleEvents.edgeLoad("edge-7", "r2", 1);
        List<byte[]> values = List.of(WorkerHarness.LOADS.encode(first), WorkerHarness.LOADS.encode(first), WorkerHarness.LOADS.encode(impostor),
                WorkerHarness.LOADS.encode(next));
        List<RecordMetadata> written = h.sendRaw(values);

        try (ResolverWorker worker = h.start(h.settings("w-conflict"))) {
            List<LoadResolved> summaries = h.resolved(3);
            List<ConsumerRecord<byte[], byte[]>> dead = h.deadLetters(1);

            assertThat(summaries).extracting(LoadResolved::getLoadId).containsExactly(first.getLoadId(), first.getLoadId(), next.getLoadId());
            assertThat(summaries).extracting(LoadResolved::getDeploymentId).containsOnly("edge-7");
            assertThat(dead).hasSize(1);
            ConsumerRecord<byte[], byte[]> letter = dead.get(0);
            assertThat(WorkerHarness.header(letter, DeadLetter.REASON) + "/" + WorkerHarness.header(letter, DeadLetter.DETAIL))
                    .isEqualTo("INVALID_CONTENT/LOAD_ID_CONFLICT");
            assertThat(WorkerHarness.header(letter, DeadLetter.SOURCE_OFFSET)).isEqualTo(Long.toString(written.get(2).offset()));
            assertThat(WorkerHarness.header(letter, DeadLetter.ERROR)).contains("deployment edge-9, not edge-7").contains("release r2, not r1");
            assertThat(letter.value()).as("the record as it came").isEqualTo(values.get(2));
            assertThat(worker.health().up()).isTrue();
        }
    }

    @Test
    void aLoadWhoseDecisionsCannotBeProducedIsDeadLetteredAloneAndTheRestFlow(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 1);
        ModelLoaded before = SampleEvents.edgeLoad("d", "r1", 1);
        // A 996-character tensor name (as long as the store's column allows) of 3-byte characters: the load and its dead
        // letter fit the 5,000-byte max.request.size this worker is given, but its decision (name and reason each carry
        // the name, 6 KB) does not.
        String longName = "blk.0." + "\u20ac".repeat(990);
        ModelLoaded unproducible = SampleEvents.load("d", "r2", List.of(
                SampleEvents.tensor(longName, "FP32", "Dense(4B)", 16, 64, SampleEvents.mappedAsStored())));
        ModelLoaded after = SampleEvents.edgeLoad("d", "r3", 1);
        h.send(List.of(before, unproducible, after));
        Map<String, String> settings = h.settings("w-large");
        settings.put("kafka.max.request.size", "5000");

        try (ResolverWorker worker = h.start(settings)) {
            List<ConsumerRecord<byte[], byte[]>> dead = h.deadLetters(1);
            List<LoadResolved> summaries = h.resolved(2);

            assertThat(dead).singleElement().satisfies(letter -> {
                assertThat(WorkerHarness.header(letter, DeadLetter.REASON)).isEqualTo("PRODUCE_FAILED");
                assertThat(WorkerHarness.header(letter, DeadLetter.DETAIL)).isEqualTo("RecordTooLargeException");
                assertThat(WorkerHarness.LOADS.decode(letter.value()).getLoadId()).isEqualTo(unproducible.getLoadId());
            });
            assertThat(summaries).extracting(LoadResolved::getLoadId).containsExactly(before.getLoadId(), after.getLoadId());
            assertThat(h.decisions(6)).hasSize(6).extracting(AllocationDecided::getLoadId).doesNotContain(unproducible.getLoadId().toString());
        }
    }

    @Test
    void twoWorkersInOneGroupSplitThePartitionsAndTogetherResolveEachLoadOnce(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 4);
        try (ResolverWorker first = h.start("w-a"); ResolverWorker second = h.start("w-b")) {
            await().atMost(Duration.ofSeconds(60)).until(() -> !first.assignment().isEmpty() && !second.assignment().isEmpty()
                    && first.assignment().size() + second.assignment().size() == 4);
            List<ModelLoaded> loads = IntStream.range(0, 24).mapToObj(i -> SampleEvents.edgeLoad("dep-" + i, "r1", 1)).toList();
            h.send(loads);

            List<LoadResolved> summaries = h.resolved(24);
            List<AllocationDecided> decisions = h.decisions(24 * 3);

            Set<TopicPartition> union = new HashSet<>(first.assignment());
            union.addAll(second.assignment());
            assertThat(first.assignment()).doesNotContainAnyElementsOf(second.assignment());
            assertThat(union).hasSize(4);
            assertThat(summaries).hasSize(24).extracting(LoadResolved::getLoadId).doesNotHaveDuplicates();
            assertThat(decisions).hasSize(72).extracting(AllocationDecided::getDecisionId).doesNotHaveDuplicates();
            assertThat(decisions).extracting(AllocationDecided::getSourcePartition).containsOnly(0, 1, 2, 3);
        }
    }

    @Test
    void exposesDecisionMetricsAndHealthOverHttp(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 1);
        Map<String, String> settings = h.settings("w-ops");
        settings.put("worker.http.port", "0");
        HttpClient http = HttpClient.newHttpClient();
        ResolverWorker worker = h.start(settings);
        try {
            h.send(List.of(SampleEvents.edgeLoad("d", "r1", 2)));
            h.resolved(1);
            URI metrics = URI.create("http://127.0.0.1:" + worker.port() + "/metrics");

            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(
                    http.send(HttpRequest.newBuilder(metrics).build(), HttpResponse.BodyHandlers.ofString()).body())
                    .contains("pa_worker_decisions_total{domain=\"MMAP_FILE\"} 3.0")
                    .contains("pa_worker_decisions_total{domain=\"HOST_OFFHEAP\"} 1.0")
                    .contains("pa_worker_loads_total{outcome=\"resolved\"} 1.0")
                    .contains("pa_worker_consumer_lag"));
            HttpResponse<String> health = http.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + worker.port() + "/health")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(health.statusCode()).isEqualTo(200);
            assertThat(health.body()).contains("\"status\":\"UP\"").contains(h.input + "-0");
        } finally {
            worker.close();
        }
        assertThat(worker.state()).isEqualTo(ResolverLoop.State.STOPPED);
        assertThat(worker.health().up()).isFalse();
    }

    @Test
    void aRuntimeThatPlacedATensorOtherwiseIsResolvedWithItsDivergedFindingNeverDeadLettered(KafkaBroker broker) throws Exception {
        WorkerHarness h = new WorkerHarness(broker, 1);
        Map<String, String> settings = h.settings("w-diverged");
        settings.put("worker.http.port", "0");
        ModelLoaded agreeing = SampleEvents.edgeLoad("d-agree", "r1", 2);
        List<TensorInfo> reported = new ArrayList<>();
        for (TensorInfo tensor : agreeing.getTensors()) {
            // As the reference decides for this edge load: token_embd off-heap, the rest mapped.
            boolean embedding = tensor.getName().equals("token_embd.weight");
            reported.add(TensorInfo.newBuilder(tensor).setRuntime(RuntimeDecision.newBuilder()
                    .setDomain(embedding ? RuntimeDomain.HOST_OFFHEAP : RuntimeDomain.MMAP_FILE)
                    .setResidentBytes(embedding ? 524_288 : tensor.getStoredBytes()).build()).build());
        }
        agreeing = ModelLoaded.newBuilder(agreeing).setTensors(reported).build();
        // The same load from a runtime that copies the first attention weight off-heap instead of mapping it.
        TensorInfo copied = TensorInfo.newBuilder(reported.get(1)).setRuntime(RuntimeDecision.newBuilder(reported.get(1).getRuntime())
                .setDomain(RuntimeDomain.HOST_OFFHEAP).build()).build();
        ModelLoaded diverging = withTensor(ModelLoaded.newBuilder(agreeing).setDeployment(
                dev.placementaudit.events.Deployment.newBuilder(agreeing.getDeployment()).setId("d-diverge").build()).build(), 1, copied);
        ResolverWorker worker = h.start(settings);
        try {
            h.send(List.of(agreeing, diverging));
            Map<String, LoadResolved> summaries = h.resolved(2).stream()
                    .collect(Collectors.toMap(LoadResolved::getDeploymentId, Function.identity()));

            assertThat(summaries.get("d-agree").getRuntimeReportedTensors()).isEqualTo(4);
            assertThat(summaries.get("d-agree").getDivergedTensors()).isZero();
            LoadResolved diverged = summaries.get("d-diverge");
            assertThat(diverged.getRuntimeReportedTensors()).isEqualTo(4);
            assertThat(diverged.getDivergedTensors()).isEqualTo(1);
            assertThat(diverged.getDivergences()).singleElement().satisfies(d -> {
                assertThat(d.getTensorName()).isEqualTo("blk.0.attn_q.weight");
                assertThat(d.getRuntimeDomain()).isEqualTo("HOST_OFFHEAP");
                assertThat(d.getReferenceDomain()).isEqualTo("MMAP_FILE");
                assertThat(d.getReferenceReasonCode()).isEqualTo("MAPPED_OK");
            });
            // Its decisions are the reference's, as for any load: what the runtime did is a finding, not the plan.
            assertThat(h.decisions(8)).filteredOn(d -> d.getDeploymentId().equals("d-diverge") && d.getTensorIndex() == 1)
                    .singleElement().extracting(AllocationDecided::getDomain).isEqualTo(MemoryDomain.MMAP_FILE);
            URI metrics = URI.create("http://127.0.0.1:" + worker.port() + "/metrics");
            HttpClient http = HttpClient.newHttpClient();
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(
                    http.send(HttpRequest.newBuilder(metrics).build(), HttpResponse.BodyHandlers.ofString()).body())
                    .contains("pa_worker_diverged_tensors_total 1.0")
                    .contains("pa_worker_diverged_loads_total 1.0")
                    .contains("pa_worker_runtime_reported_tensors_total 8.0")
                    .contains("pa_worker_loads_total{outcome=\"resolved\"} 2.0")
                    .doesNotContain("pa_worker_dlq_total{"));
        } finally {
            worker.close();
        }
    }

    private static ModelLoaded withTensor(ModelLoaded load, int index, TensorInfo tensor) {
        List<TensorInfo> tensors = new ArrayList<>(load.getTensors());
        if (index < tensors.size()) {
            tensors.set(index, tensor);
        } else {
            tensors.add(tensor);
        }
        return ModelLoaded.newBuilder(load).setLoadId(UUID.randomUUID()).setTensors(tensors).build();
    }

    private static AllocationDecided sampleDecision() {
        ModelLoaded load = SampleEvents.edgeLoad("x", "r", 1);
        return new dev.placementaudit.resolution.LoadResolution("t")
                .resolve(new dev.placementaudit.resolution.LoadValidator(10).validate(load),
                        new dev.placementaudit.resolution.Provenance("t", 0, 0), java.time.Instant.now())
                .decisions().get(0);
    }
}
