package dev.placementaudit.resolution;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.Divergence;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.MemoryDomain;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ReasonCode;
import dev.placementaudit.events.RuntimeDecision;
import dev.placementaudit.events.RuntimeDomain;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.testkit.SampleEvents;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

class LoadResolutionTest {
    private static final Instant AT = Instant.parse("2026-12-01T10:00:00Z");
    private final LoadResolution resolution = new LoadResolution("0.1.0/skainet-1192");
    private final LoadValidator validator = new LoadValidator(1_000);

    @Test
    void decidesEveryTensorWithDomainBytesAndReasons() {
        ModelLoaded load = SampleEvents.edgeLoad("chat-eu-1", "2026.12.1", 2);

        ResolvedLoad resolved = resolution.resolve(validator.validate(load), new Provenance("model-loads", 2, 41), AT);

        List<AllocationDecided> decisions = resolved.decisions();
        assertThat(decisions).extracting(AllocationDecided::getTensorName)
                .containsExactly("token_embd.weight", "blk.0.attn_q.weight", "blk.1.attn_q.weight", "output_norm.weight");
        AllocationDecided embedding = decisions.get(0);
        assertThat(embedding.getDomain()).isEqualTo(MemoryDomain.HOST_OFFHEAP);
        assertThat(embedding.getReasonCode()).isEqualTo(ReasonCode.ENCODING_NOT_MAPPABLE);
        assertThat(embedding.getPlacementReason()).isEqualTo(ReasonCode.ABOVE_THRESHOLD);
        assertThat(embedding.getMappingBlockers()).containsExactly(ReasonCode.ENCODING_NOT_MAPPABLE);
        assertThat(embedding.getResidentBytes()).isEqualTo(524_288);
        assertThat(embedding.getReason()).contains("no loader/kernel serves Dense(2B)");
        AllocationDecided q = decisions.get(1);
        assertThat(q.getDomain()).isEqualTo(MemoryDomain.MMAP_FILE);
        assertThat(q.getReasonCode()).isEqualTo(ReasonCode.MAPPED_OK);
        assertThat(q.getStoredFormat()).isEqualTo("Float32/Q4_K");
        assertThat(q.getResidentFormat()).isEqualTo("Float32/Q4_K");
        assertThat(q.getTensorIndex()).isEqualTo(1);
        assertThat(q.getTensorCount()).isEqualTo(4);
        assertThat(decisions).allSatisfy(d -> {
            assertThat(d.getLoadId()).isEqualTo(load.getLoadId().toString());
            assertThat(d.getDeploymentId()).isEqualTo("chat-eu-1");
            assertThat(d.getRelease()).isEqualTo("2026.12.1");
            assertThat(d.getSourcePartition()).isEqualTo(2);
            assertThat(d.getSourceOffset()).isEqualTo(41);
            assertThat(d.getResolverVersion()).isEqualTo("0.1.0/skainet-1192");
            assertThat(d.getPolicyDigest()).hasSize(64);
            assertThat(d.getDecidedAt()).isEqualTo(AT.toEpochMilli());
            assertThat(d.getLoadOccurredAt()).isEqualTo(load.getOccurredAt().toEpochMilli());
            assertThat(d.getMutable()).isFalse();
        });
    }

    @Test
    void decisionIdIsTheStandardNameBasedUuid() {
        UUID load = UUID.fromString("6f1c2a9e-8d7b-4c3a-9e2f-1a2b3c4d5e6f");

        assertThat(LoadResolution.decisionId(load, "blk.0.attn_q.weight", "0.1.0/skainet-1192")).isEqualTo(UUID.nameUUIDFromBytes(
                (load + "\u0000blk.0.attn_q.weight\u00000.1.0/skainet-1192").getBytes(java.nio.charset.StandardCharsets.UTF_8)).toString());
    }

    @Test
    void eventEnumsMirrorTheCoreEnumsSymbolForSymbol() {
        assertThat(java.util.Arrays.stream(MemoryDomain.values()).map(Enum::name))
                .containsExactlyElementsOf(java.util.Arrays.stream(dev.placementaudit.core.placement.MemoryDomain.values()).map(Enum::name).toList());
        for (Class<? extends Enum<?>> named : List.of(dev.placementaudit.events.RuntimeDomain.class, dev.placementaudit.events.ObservedDomain.class)) {
            assertThat(java.util.Arrays.stream(named.getEnumConstants()).map(Enum::name))
                    .containsExactlyElementsOf(java.util.Arrays.stream(MemoryDomain.values()).map(Enum::name).toList());
        }
        assertThat(java.util.Arrays.stream(ReasonCode.values()).map(Enum::name))
                .containsExactlyElementsOf(java.util.Arrays.stream(dev.placementaudit.core.placement.ReasonCode.values()).map(Enum::name).toList());
        assertThat(java.util.Arrays.stream(dev.placementaudit.events.ScopeKind.values()).map(Enum::name))
                .containsExactlyElementsOf(java.util.Arrays.stream(dev.placementaudit.core.placement.ScopeKind.values()).map(Enum::name).toList());
    }

    @Test
    void copiesWhereTheLoadHappenedOntoEveryDecision() {
        ModelLoaded load = SampleEvents.edgeLoad("chat-eu-1", "2026.12.1", 1);

        AllocationDecided d = resolution.resolve(validator.validate(load), new Provenance("model-loads", 1, 7), AT).decisions().get(2);

        assertThat(d.getCluster()).isEqualTo(load.getDeployment().getCluster());
        assertThat(d.getHost()).isEqualTo(load.getDeployment().getHost());
        assertThat(d.getModelId()).isEqualTo("sample-model");
        assertThat(d.getModelName()).isEqualTo("Sample model");
        assertThat(d.getModelSha256()).isNull();
        assertThat(d.getPlatformName()).isEqualTo("android");
        assertThat(d.getProfileName()).isEqualTo("edge");
        assertThat(d.getTensorName()).isEqualTo("output_norm.weight");
        assertThat(d.getDtype()).isEqualTo("FP32");
        assertThat(d.getStoredEncoding()).isEqualTo("Dense(4B)");
        assertThat(d.getElementCount()).isEqualTo(2_048);
        assertThat(d.getStoredBytes()).isEqualTo(8_192);
        assertThat(d.getScope()).isEqualTo(dev.placementaudit.events.ScopeKind.MODEL);
        assertThat(d.getAlignment()).isEqualTo(64);
        assertThat(d.getMappingRequested()).isTrue();
        assertThat(d.getSourceTopic()).isEqualTo("model-loads");
    }

    @Test
    void summarisesTheLoadPerDomain() {
        LoadResolved summary = resolution.resolve(validator.validate(SampleEvents.edgeLoad("d", "r", 2)),
                new Provenance("model-loads", 0, 0), AT).summary();

        assertThat(summary.getTensorCount()).isEqualTo(4);
        assertThat(summary.getMappedTensors()).isEqualTo(3);
        assertThat(summary.getMappedBytes()).isEqualTo(2 * 589_824L + 8_192);
        assertThat(summary.getOffHeapTensors()).isEqualTo(1);
        assertThat(summary.getOffHeapBytes()).isEqualTo(524_288);
        assertThat(summary.getHeapBytes()).isZero();
        assertThat(summary.getResidentBytes()).isEqualTo(summary.getMappedBytes() + summary.getOffHeapBytes());
        assertThat(summary.getMappingRequestedTensors()).isEqualTo(4);
        assertThat(summary.getMappingRefusedTensors()).isEqualTo(1);
    }

    @Test
    void theSummaryCarriesEveryFieldOfItsLoadAndItsDecisionsUnderItsOwnName() {
        ModelLoaded edge = SampleEvents.edgeLoad("d-own", "r-own", 3);
        List<TensorInfo> tensors = new java.util.ArrayList<>(edge.getTensors());
        tensors.set(1, TensorInfo.newBuilder(tensors.get(1)).setForm(SampleEvents.dequantizedMapped()).build());
        ModelLoaded load = withRuntime(ModelLoaded.newBuilder(edge).setTensors(tensors)
                .setModel(dev.placementaudit.events.ModelRef.newBuilder(edge.getModel()).setSha256("ab".repeat(32)).build()).build(),
                (index, decided) -> index == 2 ? RuntimeDecision.newBuilder(decided).setDomain(RuntimeDomain.HOST_OFFHEAP).build()
                        : index == 4 ? null : decided);
        ResolvedLoad resolved = resolution.resolve(validator.validate(load), new Provenance("topic-own", 5, 77), AT);
        List<AllocationDecided> decisions = resolved.decisions();

        // Every field named, from the load and from the decisions (encoded by another path, byte-checked against Avro).
        LoadResolved.Builder expected = LoadResolved.newBuilder().setLoadId(load.getLoadId()).setLoadOccurredAt(load.getOccurredAt())
                .setDeploymentId("d-own").setCluster("test").setHost("host-1").setRelease("r-own").setModelId("sample-model")
                .setModelName("Sample model").setModelSha256("ab".repeat(32)).setPlatformName("android").setProfileName("edge")
                .setTensorCount(5).setResolverVersion("0.1.0/skainet-1192").setPolicyDigest(decisions.get(0).getPolicyDigest())
                .setSourceTopic("topic-own").setSourcePartition(5).setSourceOffset(77).setResolvedAt(AT)
                .setPlanDigest(decisions.get(0).getPlanDigest()).setRuntimeReportedTensors(4).setDivergedTensors(1)
                .setDivergences(resolved.summary().getDivergences())
                .setStoredBytes(decisions.stream().mapToLong(AllocationDecided::getStoredBytes).sum())
                .setResidentBytes(decisions.stream().mapToLong(AllocationDecided::getResidentBytes).sum())
                .setHeapBytes(bytesIn(decisions, MemoryDomain.HOST_HEAP)).setOffHeapBytes(bytesIn(decisions, MemoryDomain.HOST_OFFHEAP))
                .setMappedBytes(bytesIn(decisions, MemoryDomain.MMAP_FILE)).setHeapTensors((int) countIn(decisions, MemoryDomain.HOST_HEAP))
                .setOffHeapTensors((int) countIn(decisions, MemoryDomain.HOST_OFFHEAP)).setMappedTensors((int) countIn(decisions, MemoryDomain.MMAP_FILE))
                .setMappingRequestedTensors((int) decisions.stream().filter(AllocationDecided::getMappingRequested).count())
                .setMappingRefusedTensors((int) decisions.stream().filter(d -> d.getMappingRequested() && !d.getMappingBlockers().isEmpty()).count());

        assertThat(resolved.summary()).isEqualTo(expected.build());
        assertThat(resolved.summary().getDivergences()).extracting(Divergence::getTensorName).containsExactly("blk.1.attn_q.weight");
        assertThat(resolved.summary().getStoredBytes()).isNotEqualTo(resolved.summary().getResidentBytes());
    }

    private static long bytesIn(List<AllocationDecided> decisions, MemoryDomain domain) {
        return decisions.stream().filter(d -> d.getDomain() == domain).mapToLong(AllocationDecided::getResidentBytes).sum();
    }

    private static long countIn(List<AllocationDecided> decisions, MemoryDomain domain) {
        return decisions.stream().filter(d -> d.getDomain() == domain).count();
    }

    @Test
    void aReEncodedWeightLosesItsMappingAndPaysItsDequantizedBytes() {
        ModelLoaded original = SampleEvents.edgeLoad("d", "r", 1);
        List<TensorInfo> tensors = new java.util.ArrayList<>(original.getTensors());
        tensors.set(1, TensorInfo.newBuilder(tensors.get(1)).setForm(SampleEvents.dequantizedMapped()).build());
        ModelLoaded load = ModelLoaded.newBuilder(original).setTensors(tensors).build();

        AllocationDecided q = resolution.resolve(validator.validate(load), new Provenance("t", 0, 0), AT).decisions().get(1);

        assertThat(q.getDomain()).isEqualTo(MemoryDomain.HOST_OFFHEAP);
        assertThat(q.getReasonCode()).isEqualTo(ReasonCode.REENCODED_AT_LOAD);
        assertThat(q.getResidentBytes()).isEqualTo(4_194_304);
        assertThat(q.getResidentFormat()).isEqualTo("Float32/Dense(4B)");
    }

    @Test
    void aRuntimeThatReportsWhatTheReferenceDecidesDivergesNowhere() {
        ModelLoaded load = withRuntime(SampleEvents.edgeLoad("d", "r", 2), (index, decided) -> decided);

        LoadResolved summary = resolution.resolve(validator.validate(load), new Provenance("t", 0, 0), AT).summary();

        assertThat(summary.getRuntimeReportedTensors()).isEqualTo(4);
        assertThat(summary.getDivergedTensors()).isZero();
        assertThat(summary.getDivergences()).isEmpty();
    }

    @Test
    void aRuntimeThatPlacesATensorElsewhereIsADivergedFindingWithBothSidesAndTheReferencesReason() {
        // The runtime copies the first mapped weight off-heap (a bug, or an older runtime): same bytes, other domain.
        ModelLoaded load = withRuntime(SampleEvents.edgeLoad("d", "r", 2), (index, decided) -> index == 1
                ? RuntimeDecision.newBuilder(decided).setDomain(RuntimeDomain.HOST_OFFHEAP).build() : index == 3 ? null : decided);

        LoadResolved summary = resolution.resolve(validator.validate(load), new Provenance("t", 0, 0), AT).summary();

        assertThat(summary.getRuntimeReportedTensors()).isEqualTo(3);
        assertThat(summary.getDivergedTensors()).isEqualTo(1);
        Divergence diverged = summary.getDivergences().get(0);
        assertThat(diverged.getTensorName()).isEqualTo("blk.0.attn_q.weight");
        assertThat(diverged.getTensorIndex()).isEqualTo(1);
        assertThat(diverged.getRuntimeDomain()).isEqualTo("HOST_OFFHEAP");
        assertThat(diverged.getReferenceDomain()).isEqualTo("MMAP_FILE");
        assertThat(diverged.getRuntimeResidentBytes()).isEqualTo(589_824).isEqualTo(diverged.getReferenceResidentBytes());
        assertThat(diverged.getReferenceReasonCode()).isEqualTo("MAPPED_OK");
        assertThat(diverged.getReferenceReason()).startsWith("blk.0.attn_q.weight");
    }

    @Test
    void aRuntimeHoldingAnotherSizeInTheSameDomainDivergesToo() {
        ModelLoaded load = withRuntime(SampleEvents.edgeLoad("d", "r", 1), (index, decided) -> index == 0
                ? RuntimeDecision.newBuilder(decided).setResidentBytes(decided.getResidentBytes() * 2).build() : decided);

        Divergence diverged = resolution.resolve(validator.validate(load), new Provenance("t", 0, 0), AT).summary().getDivergences().get(0);

        assertThat(diverged.getTensorName()).isEqualTo("token_embd.weight");
        assertThat(diverged.getRuntimeDomain()).isEqualTo(diverged.getReferenceDomain()).isEqualTo("HOST_OFFHEAP");
        assertThat(diverged.getRuntimeResidentBytes()).isEqualTo(2 * 524_288L);
        assertThat(diverged.getReferenceResidentBytes()).isEqualTo(524_288L);
    }

    @Test
    void aLoadWithoutRuntimeDecisionsReportsNone() {
        LoadResolved summary = resolution.resolve(validator.validate(SampleEvents.edgeLoad("d", "r", 2)), new Provenance("t", 0, 0), AT).summary();

        assertThat(summary.getRuntimeReportedTensors()).isZero();
        assertThat(summary.getDivergedTensors()).isZero();
    }

    /** The load as a runtime reports it: each tensor's decision as the reference makes it, then changed by {@code change}. */
    private ModelLoaded withRuntime(ModelLoaded load, java.util.function.BiFunction<Integer, RuntimeDecision, RuntimeDecision> change) {
        List<AllocationDecided> reference = resolution.resolve(validator.validate(load), new Provenance("t", 0, 0), AT).decisions();
        List<TensorInfo> tensors = new java.util.ArrayList<>();
        for (int i = 0; i < load.getTensors().size(); i++) {
            RuntimeDecision decided = RuntimeDecision.newBuilder().setDomain(RuntimeDomain.valueOf(reference.get(i).getDomain().name()))
                    .setResidentBytes(reference.get(i).getResidentBytes()).build();
            tensors.add(TensorInfo.newBuilder(load.getTensors().get(i)).setRuntime(change.apply(i, decided)).build());
        }
        return ModelLoaded.newBuilder(load).setTensors(tensors).build();
    }

    @Test
    void decisionIdsAreTheSameWhenTheSameLoadIsResolvedAgain() {
        ValidLoad load = validator.validate(SampleEvents.edgeLoad("d", "r", 2));

        List<String> first = resolution.resolve(load, new Provenance("t", 0, 5), AT).decisions().stream().map(AllocationDecided::getDecisionId).toList();
        List<String> again = resolution.resolve(load, new Provenance("t", 0, 5), AT.plusSeconds(60)).decisions().stream().map(AllocationDecided::getDecisionId).toList();
        List<String> otherVersion = new LoadResolution("0.2.0/skainet-1192").resolve(load, new Provenance("t", 0, 5), AT)
                .decisions().stream().map(AllocationDecided::getDecisionId).toList();

        assertThat(again).isEqualTo(first).doesNotHaveDuplicates();
        assertThat(otherVersion).doesNotContainAnyElementsOf(first);
    }
}
