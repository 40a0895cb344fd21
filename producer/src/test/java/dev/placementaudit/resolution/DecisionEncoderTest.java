package dev.placementaudit.resolution;

import dev.placementaudit.core.placement.AllocationDecision;
import dev.placementaudit.core.placement.AllocationResolver;
import dev.placementaudit.core.placement.PlanTensor;
import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.MemoryDomain;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ReasonCode;
import dev.placementaudit.events.ScopeKind;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.producer.simulate.Drift;
import dev.placementaudit.producer.simulate.FleetSimulator;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.schemas.LoadLayouts;
import dev.placementaudit.schemas.PlanDigest;
import dev.placementaudit.testkit.SampleEvents;
import org.apache.avro.Schema;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The worker writes its decisions without building the events (DecisionEncoder); these are the bytes Avro writes
 * for the events built the plain way, field by field from the schema's own accessors, with ids and explanations
 * computed the reference way (UUID.nameUUIDFromBytes, AllocationDecision.explanation). It lives in the producer's
 * tests because it feeds on whole simulated fleets (every catalog model), and the producer depends on resolution.
 */
class DecisionEncoderTest {
    private static final Instant AT = Instant.parse("2026-12-01T10:00:00Z");
    private static final String VERSION = "0.1.0/skainet-1192";
    private final EventSerde<AllocationDecided> serde = EventSerde.of(AllocationDecided.class);
    private final LoadValidator validator = new LoadValidator(100_000);
    private final LoadResolution resolution = new LoadResolution(VERSION);
    /** Resolves as the worker does: validated in the call, a load laid out as one before from that one's layout. */
    private final LoadResolution worker = new LoadResolution(VERSION);
    /** Resolves as the worker's RecordPreparation does: from the record's bytes, a known layout recognised in them. */
    private final LoadResolution fromBytes = new LoadResolution(VERSION);
    private final LoadLayouts layouts = new LoadLayouts(LoadResolution.LAYOUTS);
    private int readKnown;

    @Test
    void everyDecisionOfAWholeFleetIsByteForByteWhatAvroWritesForTheEvent() {
        List<String> releases = FleetSimulator.releaseNames(3);
        // Drift from the second release: dequantized (re-encoded) weights, an unservable encoding, a new threshold,
        // so blockers, off-heap and heap placements all occur, not only mapped ones.
        List<Drift> drift = List.of(new Drift.Dequantize(1, "*attn_q*"), new Drift.Unservable(1, "Q4_K"), new Drift.Threshold(2, 1_048_576));
        int compared = 0;
        int loads = 0;
        // 16 deployments of the simulator's 4 kinds (profile and platform): each layout is met by 4 of them.
        for (ModelLoaded load : new FleetSimulator(7, 16, releases, ModelCatalog.ALL, drift, AT)) {
            compared += assertSameBytes(load, new Provenance("model-loads", compared % 3, compared));
            loads++;
        }
        assertThat(compared).as("decisions compared").isGreaterThan(1_000);
        assertThat(worker.layoutsRemembered()).as("loads of one model and release under one policy share a layout")
                .isPositive().isLessThanOrEqualTo(loads / 4);
        assertThat(readKnown).as("loads whose layout LoadLayouts recognised in the bytes").isGreaterThanOrEqualTo(loads - worker.layoutsRemembered());
    }

    @Test
    void oddTextAndAMissingShaEncodeAsAvroDoes() {
        List<TensorInfo> tensors = new ArrayList<>(SampleEvents.edgeLoad("d", "r", 2).getTensors());
        tensors.set(0, TensorInfo.newBuilder(tensors.get(0)).setName("blk.0.ffn_\u00fcp.weight").build());
        tensors.set(1, TensorInfo.newBuilder(tensors.get(1)).setName("\u6ce8\u610f\u529b.\ud83d\ude00.weight").build());
        // (A lone surrogate never gets here: LoadValidator refuses it, since no UTF-8 store could keep it.)
        tensors.set(2, TensorInfo.newBuilder(tensors.get(2)).setName("tab\there.\u200b.zero-width").build());
        ModelLoaded load = SampleEvents.load("d\u00e9ploiement-\u2014", "r\u00e9l", tensors);
        assertThat(load.getModel().getSha256()).isNull();

        assertSameBytes(load, new Provenance("model-loads", 0, 0));
        assertSameBytes(ModelLoaded.newBuilder(load).setModel(dev.placementaudit.events.ModelRef.newBuilder(load.getModel())
                .setSha256("ab".repeat(32)).build()).build(), new Provenance("model-loads", 1, Long.MAX_VALUE));
    }

    @Test
    void aTensorWhoseSizeTheProducerEstimatedIsFlaggedAndTheOthersAreNot() {
        List<TensorInfo> tensors = new ArrayList<>(SampleEvents.edgeLoad("d", "r", 2).getTensors());
        // A GGUF type the producer did not know (NVFP4 = 40): an opaque encoding sized by the gap to the next tensor.
        tensors.set(1, TensorInfo.newBuilder(tensors.get(1)).setEncoding("Opaque:GGML_TYPE_40").setSizeEstimated(true).build());
        ModelLoaded load = SampleEvents.load("d", "r", tensors);

        assertSameBytes(load, new Provenance("model-loads", 0, 7));
        List<AllocationDecided> decided = resolution.resolve(validator.validate(load), new Provenance("model-loads", 0, 7), AT)
                .encodedDecisions().stream().map(serde::decode).toList();
        assertThat(decided).extracting(AllocationDecided::getSizeEstimated).containsOnlyOnce(true);
        assertThat(decided.get(1).getSizeEstimated()).isTrue();
        assertThat(decided.get(1).getStoredEncoding()).isEqualTo("Opaque:GGML_TYPE_40");
    }

    @Test
    void loadsOfOneModelUnderOnePolicyShareOnePlanWhateverTheirDeploymentHostAndTime() {
        List<TensorInfo> tensors = SampleEvents.edgeLoad("d", "r", 6).getTensors();
        String first = resolution.resolve(validator.validate(SampleEvents.load("edge-1", "r1", tensors)), new Provenance("model-loads", 0, 1),
                AT).summary().getPlanDigest();
        String second = resolution.resolve(validator.validate(SampleEvents.load("edge-2", "r2", tensors)), new Provenance("model-loads", 3, 99),
                AT.plusSeconds(3_600)).summary().getPlanDigest();
        assertThat(first).hasSize(64).isEqualTo(second);

        List<TensorInfo> changed = new ArrayList<>(tensors);
        changed.set(2, TensorInfo.newBuilder(tensors.get(2)).setSizeEstimated(true).build());
        String third = resolution.resolve(validator.validate(SampleEvents.load("edge-1", "r1", changed)), new Provenance("model-loads", 0, 1),
                AT).summary().getPlanDigest();
        assertThat(third).as("one tensor's decision differs: another plan").isNotEqualTo(first);
    }

    @Test
    void writesTheSchemasFieldsInTheSchemasOrder() {
        assertThat(AllocationDecided.getClassSchema().getFields()).extracting(Schema.Field::name)
                .containsExactlyElementsOf(DecisionEncoder.FIELDS);
    }

    private int assertSameBytes(ModelLoaded load, Provenance source) {
        ValidLoad valid = validator.validate(load);
        ResolvedLoad resolved = resolution.resolve(valid, source, AT);
        List<byte[]> encoded = resolved.encodedDecisions();
        List<PlanTensor> tensors = valid.tensors();
        assertThat(encoded).hasSize(tensors.size());
        List<AllocationDecided> references = new ArrayList<>();
        for (int i = 0; i < tensors.size(); i++) {
            references.add(reference(valid, tensors.get(i), i, source));
        }
        // The plan digest as the store computes it, from decoded events: the worker's, value by value, must agree.
        String plan = PlanDigest.of(references);
        assertThat(resolved.summary().getPlanDigest()).isEqualTo(plan);
        ResolvedLoad viaLayout = worker.resolve(load, validator, source, AT);
        for (int i = 0; i < tensors.size(); i++) {
            AllocationDecided expected = AllocationDecided.newBuilder(references.get(i)).setPlanDigest(plan).build();
            assertThat(encoded.get(i)).as("decision %d of %s (%s)", i, load.getModel().getId(), tensors.get(i).name())
                    .isEqualTo(serde.encode(expected));
            assertThat(viaLayout.encodedDecisions().get(i)).as("decision %d of %s, from its layout", i, load.getModel().getId())
                    .isEqualTo(encoded.get(i));
        }
        assertThat(viaLayout.encodedDecisions()).hasSameSizeAs(encoded);
        assertThat(viaLayout.summary()).isEqualTo(resolved.summary());
        LoadLayouts.Read read = layouts.read(EventSerde.of(ModelLoaded.class).encode(load));
        readKnown += read.known() ? 1 : 0;
        ResolvedLoad viaBytes = fromBytes.resolve(read, validator, source, AT);
        assertThat(viaBytes.encodedDecisions()).as("from the bytes, layout %s", read.known() ? "recognised" : "decoded")
                .containsExactlyElementsOf(encoded);
        assertThat(viaBytes.summary()).isEqualTo(resolved.summary());
        return tensors.size();
    }

    private static AllocationDecided reference(ValidLoad valid, PlanTensor tensor, int index, Provenance source) {
        ModelLoaded event = valid.event();
        AllocationDecision decision = AllocationResolver.resolve(tensor, valid.policy().profile(), valid.policy().platform());
        return AllocationDecided.newBuilder()
                .setDecisionId(UUID.nameUUIDFromBytes((event.getLoadId() + "\u0000" + tensor.name() + "\u0000" + VERSION)
                        .getBytes(StandardCharsets.UTF_8)).toString())
                .setLoadId(event.getLoadId().toString())
                .setLoadOccurredAt(event.getOccurredAt().toEpochMilli())
                .setDeploymentId(event.getDeployment().getId())
                .setCluster(event.getDeployment().getCluster())
                .setHost(event.getDeployment().getHost())
                .setRelease(event.getRelease())
                .setModelId(event.getModel().getId())
                .setModelName(event.getModel().getName())
                .setModelSha256(event.getModel().getSha256())
                .setPlatformName(event.getPlatform().getName())
                .setProfileName(event.getProfile().getName())
                .setTensorName(tensor.name())
                .setTensorIndex(index)
                .setTensorCount(valid.tensors().size())
                .setDtype(tensor.format().dtype().name())
                .setStoredEncoding(tensor.format().encoding().spec())
                .setStoredFormat(tensor.format().toString())
                .setElementCount(tensor.elementCount())
                .setStoredBytes(tensor.bytes())
                .setSizeEstimated(event.getTensors().get(index).getSizeEstimated())
                .setResidentFormat(decision.residentFormat().toString())
                .setResidentBytes(decision.residentBytes())
                .setDomain(MemoryDomain.valueOf(decision.domain().name()))
                .setScope(ScopeKind.valueOf(decision.scope().name()))
                .setMutable(decision.spec().mutable())
                .setAlignment(decision.spec().alignment())
                .setMappingRequested(decision.mappingRequested())
                .setReasonCode(ReasonCode.valueOf(decision.primaryReason().name()))
                .setPlacementReason(ReasonCode.valueOf(decision.placement().name()))
                .setMappingBlockers(decision.mappingBlockers().stream().map(code -> ReasonCode.valueOf(code.name())).toList())
                .setReason(decision.explanation())
                .setResolverVersion(VERSION)
                .setPolicyDigest(valid.policy().digest())
                .setSourceTopic(source.topic())
                .setSourcePartition(source.partition())
                .setSourceOffset(source.offset())
                .setDecidedAt(AT.toEpochMilli())
                .build();
    }
}
