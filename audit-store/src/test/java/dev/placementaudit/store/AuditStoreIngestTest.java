package dev.placementaudit.store;

import dev.placementaudit.events.AlertKind;
import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.PlacementAlert;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.schemas.EventType;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.store.query.AlertQueries;
import dev.placementaudit.store.query.LoadQueries;
import dev.placementaudit.store.regression.FindingKind;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.testkit.TopicReader;
import dev.placementaudit.resolution.ResolvedLoad;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

@ExtendWith(KafkaBrokerExtension.class)
class AuditStoreIngestTest {

    @DatabaseTest
    void storesWhereEveryTensorLandedAndCompletesEachLoad(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        List<ModelLoaded> loads = IntStream.range(0, 6).mapToObj(i -> StoreHarness.load("dep-" + (i % 3), "r1", 2, i, false)).toList();
        List<ResolvedLoad> resolved = h.publish(loads);

        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 6);
            LoadQueries.LoadDetail detail = store.queries().load(loads.get(4).getLoadId().toString()).orElseThrow();

            assertThat(h.count("SELECT COUNT(*) FROM load_tensors")).isEqualTo(6 * 4);
            // Six loads of one model under one policy: one plan, its four tensors stored once; nothing left staged.
            assertThat(h.count("SELECT COUNT(*) FROM plans")).isEqualTo(1);
            assertThat(h.count("SELECT COUNT(*) FROM plan_tensors")).isEqualTo(4);
            assertThat(h.count("SELECT COUNT(*) FROM decisions")).isZero();
            assertThat(h.count("SELECT COUNT(DISTINCT plan_digest) FROM loads")).isEqualTo(1);
            assertThat(detail.load().planDigest()).isEqualTo(resolved.get(4).summary().getPlanDigest());
            assertThat(detail.load().deploymentId()).isEqualTo("dep-1");
            assertThat(detail.load().mappedTensors()).isEqualTo(3);
            assertThat(detail.load().offHeapBytes()).isEqualTo(524_288);
            List<AllocationDecided> expected = resolved.get(4).decisions();
            assertThat(detail.tensors()).hasSize(expected.size());
            for (int i = 0; i < expected.size(); i++) {
                LoadQueries.TensorRow row = detail.tensors().get(i);
                assertThat(row.name()).isEqualTo(expected.get(i).getTensorName());
                assertThat(row.domain()).isEqualTo(expected.get(i).getDomain().name());
                assertThat(row.residentBytes()).isEqualTo(expected.get(i).getResidentBytes());
                assertThat(row.reasonCode()).isEqualTo(expected.get(i).getReasonCode().name());
                assertThat(row.reason()).isEqualTo(expected.get(i).getReason());
            }
            assertThat(h.count("SELECT COUNT(*) FROM findings")).as("one release: nothing to compare").isZero();
        }
    }

    @DatabaseTest
    void aLoadIsCompleteOnlyOnceItsSummaryAndAllItsDecisionsArrived(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        ModelLoaded load = StoreHarness.load("d", "r1", 2, 0, false);
        ResolvedLoad r = h.resolve(load);
        // The summary and only some decisions first.
        h.publishRaw(h.resolved, StoreHarness.SUMMARIES.encode(r.summary()));
        h.publishRaw(h.decisions, StoreHarness.DECISIONS.encode(r.decisions().get(0)));

        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM decisions") == 1);
            assertThat(h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE")).isZero();

            for (AllocationDecided d : r.decisions().subList(1, r.decisions().size())) {
                h.publishRaw(h.decisions, StoreHarness.DECISIONS.encode(d));
            }

            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 1);
            // Its plan was built from the staged decisions, which then went.
            assertThat(h.count("SELECT COUNT(*) FROM load_tensors")).isEqualTo(r.decisions().size());
            assertThat(h.count("SELECT COUNT(*) FROM decisions")).isZero();
            assertThat(h.count("SELECT COUNT(*) FROM loads WHERE plan_digest = '" + r.summary().getPlanDigest() + "'")).isEqualTo(1);
        }
    }

    @DatabaseTest
    void duplicatedRecordsAreStoredOnce(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        ModelLoaded load = StoreHarness.load("d", "r1", 3, 0, false);
        h.publish(List.of(load, load, load));

        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM ingest_offsets") > 0
                    && h.count("SELECT SUM(next_offset) FROM ingest_offsets") == 3 * 5 + 3);

            assertThat(h.count("SELECT COUNT(*) FROM load_tensors")).isEqualTo(5);
            assertThat(h.count("SELECT COUNT(*) FROM plan_tensors")).isEqualTo(5);
            assertThat(h.count("SELECT COUNT(*) FROM loads")).isEqualTo(1);
        }
    }

    @DatabaseTest
    void aRestartResumesFromTheOffsetsStoredWithTheRows(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        h.publish(IntStream.range(0, 4).mapToObj(i -> StoreHarness.load("d" + i, "r1", 1, i, false)).toList());
        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 4);
        }
        h.publish(IntStream.range(4, 8).mapToObj(i -> StoreHarness.load("d" + i, "r1", 1, i, false)).toList());

        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 8);
            assertThat(h.count("SELECT COUNT(*) FROM load_tensors")).isEqualTo(8 * 3);
            assertThat(h.count("SELECT COUNT(*) FROM plans")).isEqualTo(1);
            assertThat(h.count("SELECT SUM(next_offset) FROM ingest_offsets")).isEqualTo(8 * 3 + 8);
        }
    }

    @DatabaseTest
    void aReleaseThatLosesMappingsIsARegressionWithAnOffHeapAlert(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        ModelLoaded before = StoreHarness.load("phone-1", "r1", 3, 0, false);
        ModelLoaded after = StoreHarness.load("phone-1", "r2", 3, 24, true);
        h.publish(List.of(before, after));
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

        try (AuditStore store = h.start(h.settings(), registry)) {
            // The per-load alerts (store.alerts.per.load is on in the harness) and the one incident they belong to.
            List<ConsumerRecord<byte[], byte[]>> published = TopicReader.readCommitted(broker, h.alerts, 3);
            assertThat(published).filteredOn(StoreHarness::isIncident).hasSize(1);
            List<PlacementAlert> alerts = published.stream().filter(r -> !StoreHarness.isIncident(r))
                    .map(r -> EventSerde.of(PlacementAlert.class).decode(r.value())).toList();

            assertThat(h.count("SELECT COUNT(*) FROM findings WHERE kind = '" + FindingKind.LOST_MAPPING + "'")).isEqualTo(3);
            assertThat(h.count("SELECT COUNT(*) FROM findings WHERE kind = '" + FindingKind.FORMAT_CHANGED + "'")).isEqualTo(3);
            assertThat(alerts).extracting(PlacementAlert::getKind).containsExactlyInAnyOrder(AlertKind.OFFHEAP_GROWTH, AlertKind.LOST_MAPPING);
            PlacementAlert growth = alerts.stream().filter(a -> a.getKind() == AlertKind.OFFHEAP_GROWTH).findFirst().orElseThrow();
            assertThat(growth.getDeploymentId()).isEqualTo("phone-1");
            assertThat(growth.getFromRelease()).isEqualTo("r1");
            assertThat(growth.getToRelease()).isEqualTo("r2");
            assertThat(growth.getBeforeBytes()).isEqualTo(524_288);
            assertThat(growth.getAfterBytes()).isEqualTo(524_288 + 3 * 4_194_304L);
            assertThat(growth.getDeltaBytes()).isEqualTo(3 * 4_194_304L);
            assertThat(growth.getRule()).isEqualTo("off-heap growth > 10% and > 1 MB");
            assertThat(growth.getTopTensors()).hasSize(3).allSatisfy(t -> {
                assertThat(t.getBeforeDomain()).isEqualTo("MMAP_FILE");
                assertThat(t.getAfterDomain()).isEqualTo("HOST_OFFHEAP");
                assertThat(t.getAfterReason()).contains("re-encoded at load");
                assertThat(t.getBeforeReason()).contains("mapped read-only");
            });
            assertThat(registry.scrape()).contains("pa_store_load_bytes{deployment=\"phone-1\",domain=\"HOST_OFFHEAP\",model=\"sample-model\",release=\"r2\"} 1.31072E7")
                    .contains("pa_store_alerts_total{kind=\"OFFHEAP_GROWTH\",state=\"raised\"} 1.0");
            await().atMost(Duration.ofSeconds(30)).until(() -> h.count("SELECT COUNT(*) FROM alerts WHERE published_at IS NOT NULL") == 2);
        }
    }

    @DatabaseTest
    void anExpectedGrowthBudgetSuppressesTheAlert(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        try (AuditStore store = h.start()) {
            try (Connection c = db.connect(); PreparedStatement s = c.prepareStatement("INSERT INTO growth_budgets VALUES (?, ?, ?, ?, ?, ?)")) {
                s.setString(1, "phone-1");
                s.setString(2, "r2");
                s.setString(3, "OFFHEAP_GROWTH");
                s.setLong(4, 64L << 20);
                s.setString(5, "PLAT-42: r2 dequantizes attention on purpose");
                s.setTimestamp(6, Timestamp.from(Instant.now()));
                s.executeUpdate();
            }
            h.publish(List.of(StoreHarness.load("phone-1", "r1", 3, 0, false), StoreHarness.load("phone-1", "r2", 3, 24, true)));

            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM alerts") == 2);
            await().atMost(Duration.ofSeconds(30)).until(() -> h.count("SELECT COUNT(*) FROM alerts WHERE published_at IS NOT NULL") == 1);

            List<AlertQueries.AlertRow> alerts = store.queries().alerts("phone-1", 10);
            AlertQueries.AlertRow growth = alerts.stream().filter(a -> a.kind().equals("OFFHEAP_GROWTH")).findFirst().orElseThrow();
            assertThat(growth.suppressedBy()).isEqualTo("within budget of 64 MB: PLAT-42: r2 dequantizes attention on purpose");
            assertThat(growth.publishedAt()).isNull();
            // A growth budget covers the deployment's per-load alert; the incident (a cause, not a deployment) is published.
            List<PlacementAlert> onTopic = TopicReader.readCommitted(broker, h.alerts, 2).stream().filter(r -> !StoreHarness.isIncident(r))
                    .map(r -> EventSerde.of(PlacementAlert.class).decode(r.value())).toList();
            assertThat(onTopic).extracting(PlacementAlert::getKind).containsExactly(AlertKind.LOST_MAPPING);
        }
    }

    @DatabaseTest
    void createsItsAlertAndDeadLetterTopicsWhenTheBrokerHasNone(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        Map<String, String> settings = h.settings();
        String alerts = KafkaBroker.uniqueTopic("never-created-alerts");
        settings.put("store.alerts.topic", alerts);
        settings.put("store.dlq.topic", alerts + ".dlq");
        h.publish(List.of(StoreHarness.load("phone-1", "r1", 2, 0, false), StoreHarness.load("phone-1", "r2", 2, 24, true)));

        try (AuditStore store = h.start(settings)) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM alerts WHERE published_at IS NOT NULL") == 2);

            assertThat(TopicReader.readCommitted(broker, alerts, 3)).as("two per-load alerts and their incident").hasSize(3)
                    .filteredOn(StoreHarness::isIncident).hasSize(1);
            assertThat(TopicReader.readCommitted(broker, alerts + ".dlq", 0)).isEmpty();
        }
    }

    @DatabaseTest
    void undecodableRecordsGoToTheDeadLettersAndIngestionGoesOn(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        h.publishRaw(h.decisions, "garbage".getBytes(StandardCharsets.UTF_8));
        h.publish(List.of(StoreHarness.load("d", "r1", 1, 0, false)));

        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 1);
            List<ConsumerRecord<byte[], byte[]>> dead = TopicReader.readCommitted(broker, h.decisions + ".dlq", 1);

            assertThat(dead).singleElement().satisfies(r -> {
                assertThat(new String(r.value(), StandardCharsets.UTF_8)).isEqualTo("garbage");
                assertThat(new String(r.headers().lastHeader(DeadLetter.REASON).value(), StandardCharsets.UTF_8)).isEqualTo("UNDECODABLE");
            });
        }
    }

    @DatabaseTest
    void aDecisionWhoseSizeTheProducerEstimatedSaysSoAndDecisionsWrittenBeforeTheFlagReadAsPriced(KafkaBroker broker, TestDatabase db)
            throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        ModelLoaded sample = StoreHarness.load("new-runtime", "r1", 2, 0, false);
        List<TensorInfo> tensors = new ArrayList<>(sample.getTensors());
        // A GGUF type the producer did not know (NVFP4 = 40): sized by the gap to the next tensor, and flagged.
        tensors.set(1, TensorInfo.newBuilder(tensors.get(1)).setEncoding("Opaque:GGML_TYPE_40").setSizeEstimated(true).build());
        ModelLoaded estimated = ModelLoaded.newBuilder(sample).setTensors(tensors).build();
        h.publish(List.of(estimated));
        // A load whose decisions an older worker wrote, with AllocationDecided v1, which has no such flag.
        ModelLoaded old = StoreHarness.load("old-worker", "r1", 2, 0, false);
        ResolvedLoad r = h.resolve(old);
        for (AllocationDecided d : r.decisions()) {
            h.publishRaw(h.decisions, asVersion1(d));
        }
        h.publishRaw(h.resolved, StoreHarness.SUMMARIES.encode(r.summary()));

        try (AuditStore store = h.start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 2);

            assertThat(store.queries().load(estimated.getLoadId().toString()).orElseThrow().tensors())
                    .extracting(LoadQueries.TensorRow::name, LoadQueries.TensorRow::sizeEstimated)
                    .containsExactly(tuple("token_embd.weight", false), tuple("blk.0.attn_q.weight", true),
                            tuple("blk.1.attn_q.weight", false), tuple("output_norm.weight", false));
            assertThat(store.queries().load(old.getLoadId().toString()).orElseThrow().tensors())
                    .hasSize(4).noneMatch(LoadQueries.TensorRow::sizeEstimated);
        }
    }

    /** The decision as a worker built before AllocationDecided v2 would have written it. */
    private static byte[] asVersion1(AllocationDecided decision) throws Exception {
        Schema v1 = EventType.ALLOCATION_DECIDED.history().get(0);
        assertThat(v1.getField("sizeEstimated")).isNull();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(bytes, null);
        new SpecificDatumWriter<AllocationDecided>(AllocationDecided.getClassSchema()).write(decision, encoder);
        encoder.flush();
        GenericRecord old = new GenericDatumReader<GenericRecord>(AllocationDecided.getClassSchema(), v1)
                .read(null, DecoderFactory.get().binaryDecoder(bytes.toByteArray(), null));
        ByteBuffer buffer = new BinaryMessageEncoder<GenericRecord>(GenericData.get(), v1).encode(old);
        byte[] encoded = new byte[buffer.remaining()];
        buffer.get(encoded);
        return encoded;
    }
}
