package dev.placementaudit.schemas;

import dev.placementaudit.events.AlertKind;
import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.Deployment;
import dev.placementaudit.events.EncodingRequestKind;
import dev.placementaudit.events.FileFormat;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ObservationMethod;
import dev.placementaudit.events.ObservedDomain;
import dev.placementaudit.events.ObservedTensor;
import dev.placementaudit.events.MemoryDomain;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ModelRef;
import dev.placementaudit.events.IncidentEvent;
import dev.placementaudit.events.IncidentState;
import dev.placementaudit.events.PlacementAlert;
import dev.placementaudit.events.PlacementIncident;
import dev.placementaudit.events.PlatformCapabilities;
import dev.placementaudit.events.ProfileSettings;
import dev.placementaudit.events.ReasonCode;
import dev.placementaudit.events.ScopeKind;
import dev.placementaudit.events.TensorByteOrder;
import dev.placementaudit.events.TensorForm;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.events.TensorResidency;
import dev.placementaudit.events.TensorShapeOrientation;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** One of each event, filled in the way the services fill them. */
final class Samples {
    static final UUID LOAD_ID = UUID.fromString("6f1c2a9e-8d7b-4c3a-9e2f-1a2b3c4d5e6f");
    static final Instant AT = Instant.parse("2026-11-30T12:00:00Z");

    private Samples() {
    }

    static ModelLoaded modelLoaded() {
        TensorForm mapped = TensorForm.newBuilder().setEncoding(EncodingRequestKind.KEEP).setTarget(null)
                .setByteOrder(TensorByteOrder.AS_STORED).setShapeOrientation(TensorShapeOrientation.AS_STORED)
                .setResidency(TensorResidency.MAPPED).build();
        return ModelLoaded.newBuilder()
                .setLoadId(LOAD_ID).setOccurredAt(AT)
                .setDeployment(Deployment.newBuilder().setId("chat-eu-1").setCluster("eu-west").setHost("node-07").build())
                .setRelease("2026.11.2")
                .setModel(ModelRef.newBuilder().setId("llama-3.2-1b-q4km").setName("Llama 3.2 1B Q4_K_M")
                        .setSha256("ab".repeat(32)).setSizeBytes(807_690_240L).setFileFormat(FileFormat.GGUF).build())
                .setPlatform(PlatformCapabilities.newBuilder().setName("android").setSupportsMappedFiles(true)
                        .setSupportsOffHeap(true).setMappedServableEncodings(List.of("Dense(4B)", "Q4_K", "Q6_K")).build())
                .setProfile(ProfileSettings.newBuilder().setName("edge").setOffHeapThresholdBytes(262_144)
                        .setReserveBytes(0).setWeightsMapped(true).setStrict(false).build())
                .setTensors(List.of(
                        TensorInfo.newBuilder().setName("blk.0.attn_q.weight").setDtype("FP32").setEncoding("Q4_K")
                                .setShape(List.of(2048L, 512L)).setElementCount(1_048_576).setStoredBytes(589_824)
                                .setFileOffset(4_096L).setForm(mapped).build(),
                        TensorInfo.newBuilder().setName("output_norm.weight").setDtype("FP32").setEncoding("Dense(4B)")
                                .setShape(List.of(2048L)).setElementCount(2_048).setStoredBytes(8_192)
                                .setFileOffset(593_920L).setForm(null).build()))
                .setLabels(Map.of("region", "eu"))
                .setProducer("placement-audit-tests")
                .build();
    }

    static LoadObserved loadObserved() {
        return LoadObserved.newBuilder().setLoadId(LOAD_ID).setDeploymentId("chat-eu-1").setObservedAt(AT)
                .setMethod(ObservationMethod.newBuilder().setName("jvm-pools").setRuntime("OpenJDK 17").setLimits(List.of("heap is sampled")).build())
                .setHeapUsedBeforeBytes(1_000L).setHeapUsedAfterBytes(9_192L).setDirectBeforeBytes(0L).setDirectAfterBytes(589_824L)
                .setFileMappedBytes(807_690_240L)
                .setTensors(List.of(ObservedTensor.newBuilder().setName("blk.0.attn_q.weight").setDomain(ObservedDomain.HOST_OFFHEAP)
                        .setResidentBytes(589_824).build()))
                .setProducer("placement-audit-tests")
                .build();
    }

    static AllocationDecided allocationDecided() {
        return AllocationDecided.newBuilder()
                .setDecisionId("d-1").setLoadId(LOAD_ID.toString()).setLoadOccurredAt(AT.toEpochMilli())
                .setDeploymentId("chat-eu-1").setCluster("eu-west").setHost("node-07").setRelease("2026.11.2")
                .setModelId("llama-3.2-1b-q4km").setModelName("Llama 3.2 1B Q4_K_M").setModelSha256(null)
                .setPlatformName("android").setProfileName("edge")
                .setTensorName("blk.0.attn_q.weight").setTensorIndex(0).setTensorCount(2)
                .setDtype("FP32").setStoredEncoding("Q4_K").setStoredFormat("Float32/Q4_K")
                .setElementCount(1_048_576).setStoredBytes(589_824)
                .setResidentFormat("Float32/Q4_K").setResidentBytes(589_824)
                .setDomain(MemoryDomain.MMAP_FILE).setScope(ScopeKind.MODEL).setMutable(false).setAlignment(64)
                .setMappingRequested(true).setReasonCode(ReasonCode.MAPPED_OK).setPlacementReason(ReasonCode.MAPPED_OK)
                .setMappingBlockers(List.of()).setReason("blk.0.attn_q.weight: MMAP_FILE/MODEL - mapped")
                .setResolverVersion("0.1.0/skainet-1192").setPolicyDigest("0".repeat(64))
                .setSourceTopic("model-loads").setSourcePartition(0).setSourceOffset(42)
                .setDecidedAt(AT.toEpochMilli())
                .build();
    }

    static LoadResolved loadResolved() {
        return LoadResolved.newBuilder()
                .setLoadId(LOAD_ID).setLoadOccurredAt(AT)
                .setDeploymentId("chat-eu-1").setCluster("eu-west").setHost("node-07").setRelease("2026.11.2")
                .setModelId("llama-3.2-1b-q4km").setModelName("Llama 3.2 1B Q4_K_M").setModelSha256(null)
                .setPlatformName("android").setProfileName("edge")
                .setTensorCount(2).setStoredBytes(598_016).setResidentBytes(598_016)
                .setHeapBytes(8_192).setOffHeapBytes(0).setMappedBytes(589_824)
                .setHeapTensors(1).setOffHeapTensors(0).setMappedTensors(1)
                .setMappingRequestedTensors(1).setMappingRefusedTensors(0)
                .setResolverVersion("0.1.0/skainet-1192").setPolicyDigest("0".repeat(64))
                .setSourceTopic("model-loads").setSourcePartition(0).setSourceOffset(42)
                .setResolvedAt(AT)
                .build();
    }

    static PlacementAlert placementAlert() {
        return PlacementAlert.newBuilder()
                .setAlertId("a-1").setKind(AlertKind.OFFHEAP_GROWTH)
                .setDeploymentId("chat-eu-1").setModelId("llama-3.2-1b-q4km")
                .setFromRelease("2026.11.1").setToRelease("2026.11.2")
                .setFromLoadId(null).setToLoadId(LOAD_ID.toString())
                .setBeforeBytes(0).setAfterBytes(4_194_304).setDeltaBytes(4_194_304)
                .setRule("off-heap growth > 10% and > 1 MB").setThresholdPercent(10.0).setThresholdBytes(1_048_576L)
                .setTopTensors(List.of())
                .setDetectedAt(AT)
                .build();
    }

    static PlacementIncident placementIncident() {
        return PlacementIncident.newBuilder()
                .setIncidentId("inc-0123456789abcdef").setEvent(IncidentEvent.OPENED).setState(IncidentState.OPEN).setVersion(1)
                .setModelId("llama-3.2-1b-q4km").setFromRelease("2026.11.1").setToRelease("2026.11.2")
                .setPrimaryKind("LOST_MAPPING").setKinds(List.of("FORMAT_CHANGED", "LOST_MAPPING"))
                .setCause("16 tensors re-encoded at load (Q6_K -> Dense(4B)): lost mapping, +816 MB off-heap, -816 MB mapped")
                .setTensorCount(16).setTensors(List.of("blk.0.ffn_down.weight"))
                .setDeploymentsShowing(37).setDeploymentsAffected(40).setDeploymentsOnRelease(100).setExposure(0.37)
                .setBytesMoved(1_711_276_032L).setOffHeapDeltaBytes(855_638_016L)
                .setFirstSeen(AT).setLastSeen(AT).setPublishedAt(AT)
                .build();
    }
}
