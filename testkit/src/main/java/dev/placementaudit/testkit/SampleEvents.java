package dev.placementaudit.testkit;

import dev.placementaudit.events.Deployment;
import dev.placementaudit.events.EncodingRequestKind;
import dev.placementaudit.events.FileFormat;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ModelRef;
import dev.placementaudit.events.PlatformCapabilities;
import dev.placementaudit.events.ProfileSettings;
import dev.placementaudit.events.TensorByteOrder;
import dev.placementaudit.events.TensorForm;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.events.TensorResidency;
import dev.placementaudit.events.TensorShapeOrientation;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Small, fully specified model loads for tests. Realistic fleets come from the producer's simulator; these are
 * for asserting exact outcomes, so every tensor's placement can be worked out by hand.
 */
public final class SampleEvents {
    private SampleEvents() {
    }

    public static TensorForm mappedAsStored() {
        return form(EncodingRequestKind.KEEP, null, TensorResidency.MAPPED);
    }

    public static TensorForm dequantizedMapped() {
        return form(EncodingRequestKind.DEQUANTIZE_TO, "FP32", TensorResidency.MAPPED);
    }

    public static TensorForm form(EncodingRequestKind encoding, String target, TensorResidency residency) {
        return TensorForm.newBuilder().setEncoding(encoding).setTarget(target).setByteOrder(TensorByteOrder.AS_STORED)
                .setShapeOrientation(TensorShapeOrientation.AS_STORED).setResidency(residency).build();
    }

    public static TensorInfo tensor(String name, String dtype, String encoding, long elements, long storedBytes, TensorForm form) {
        return TensorInfo.newBuilder().setName(name).setDtype(dtype).setEncoding(encoding).setShape(List.of(elements))
                .setElementCount(elements).setStoredBytes(storedBytes).setFileOffset(null).setForm(form).build();
    }

    /**
     * An edge deployment on a platform that maps files: {@code q4k} Q4_K weights of 1 Mi elements (589,824 bytes,
     * mapped), one F16 embedding of 256 Ki elements (524,288 bytes, not servable: off-heap), and one F32 norm of
     * 2,048 elements (8,192 bytes, mapped).
     */
    public static ModelLoaded edgeLoad(String deploymentId, String release, int q4k) {
        List<TensorInfo> tensors = new ArrayList<>();
        tensors.add(tensor("token_embd.weight", "FP16", "Dense(2B)", 262_144, 524_288, mappedAsStored()));
        for (int i = 0; i < q4k; i++) {
            tensors.add(tensor("blk." + i + ".attn_q.weight", "FP32", "Q4_K", 1_048_576, 589_824, mappedAsStored()));
        }
        tensors.add(tensor("output_norm.weight", "FP32", "Dense(4B)", 2_048, 8_192, mappedAsStored()));
        return load(deploymentId, release, tensors);
    }

    public static ModelLoaded load(String deploymentId, String release, List<TensorInfo> tensors) {
        return ModelLoaded.newBuilder()
                .setLoadId(UUID.randomUUID())
                .setOccurredAt(Instant.now())
                .setDeployment(Deployment.newBuilder().setId(deploymentId).setCluster("test").setHost("host-1").build())
                .setRelease(release)
                .setModel(ModelRef.newBuilder().setId("sample-model").setName("Sample model").setSha256(null)
                        .setSizeBytes(tensors.stream().mapToLong(TensorInfo::getStoredBytes).sum())
                        .setFileFormat(FileFormat.GGUF).build())
                .setPlatform(PlatformCapabilities.newBuilder().setName("android").setSupportsMappedFiles(true)
                        .setSupportsOffHeap(true)
                        .setMappedServableEncodings(List.of("Dense(4B)", "Q4_K", "Q6_K", "Q5_K", "Q8_0", "Q4_0", "Q5_0", "Q5_1"))
                        .build())
                .setProfile(ProfileSettings.newBuilder().setName("edge").setOffHeapThresholdBytes(262_144)
                        .setReserveBytes(0).setWeightsMapped(true).setStrict(false).build())
                .setTensors(tensors)
                .setLabels(Map.of())
                .setProducer("placement-audit-testkit")
                .build();
    }
}
