package dev.placementaudit.producer.model;

import dev.placementaudit.core.format.TensorEncoding;
import dev.placementaudit.core.placement.EncodingRequest;
import dev.placementaudit.core.placement.PlannerProfile;
import dev.placementaudit.core.placement.WeightForm;
import dev.placementaudit.events.Deployment;
import dev.placementaudit.events.EncodingRequestKind;
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

/** Assembles the ModelLoaded event: the stored model, where it loads, and the form the loader holds each tensor in. */
public final class ModelLoadedBuilder {
    private ModelLoadedBuilder() {
    }

    public static ModelLoaded build(UUID loadId, Instant occurredAt, String modelId, StoredModel model, DeploymentTarget target,
                                    FormPolicy policy, Map<String, String> labels, String producer) {
        return build(loadId, occurredAt, modelId, model, target, policy.profile(), policy.forms(model.tensors()), labels, producer);
    }

    /**
     * The same with the forms given: a runtime with rules of its own (llama.cpp) asks no SKaiNET form of a tensor, and a
     * tensor with no form is sent with none.
     */
    public static ModelLoaded build(UUID loadId, Instant occurredAt, String modelId, StoredModel model, DeploymentTarget target,
                                    PlannerProfile profile, Map<String, WeightForm> forms, Map<String, String> labels, String producer) {
        List<TensorInfo> tensors = new ArrayList<>(model.tensors().size());
        for (StoredTensor tensor : model.tensors()) {
            tensors.add(TensorInfo.newBuilder()
                    .setName(tensor.name())
                    .setDtype(tensor.format().dtype().name())
                    .setEncoding(tensor.format().encoding().spec())
                    .setShape(tensor.shape())
                    .setElementCount(tensor.elementCount())
                    .setStoredBytes(tensor.storedBytes())
                    .setSizeEstimated(tensor.sizeEstimated())
                    .setFileOffset(tensor.fileOffset().isPresent() ? tensor.fileOffset().getAsLong() : null)
                    .setForm(forms.containsKey(tensor.name()) ? form(forms.get(tensor.name())) : null)
                    .build());
        }
        return ModelLoaded.newBuilder()
                .setLoadId(loadId)
                .setOccurredAt(occurredAt)
                .setDeployment(Deployment.newBuilder().setId(target.deploymentId()).setCluster(target.cluster()).setHost(target.host()).build())
                .setRelease(target.release())
                .setModel(ModelRef.newBuilder().setId(modelId).setName(model.name()).setSha256(model.sha256().orElse(null))
                        .setSizeBytes(model.sizeBytes()).setFileFormat(model.fileFormat()).build())
                .setPlatform(PlatformCapabilities.newBuilder().setName(target.platformName())
                        .setSupportsMappedFiles(target.platform().supportsMappedFiles())
                        .setSupportsOffHeap(target.platform().supportsOffHeap())
                        .setMappedServableEncodings(target.platform().mappedServableEncodings().stream().map(TensorEncoding::spec).sorted().toList())
                        .build())
                .setProfile(ProfileSettings.newBuilder().setName(profile.name()).setOffHeapThresholdBytes(profile.offHeapThresholdBytes())
                        .setReserveBytes(profile.reserveBytes()).setWeightsMapped(profile.weightsMapped()).setStrict(profile.strict()).build())
                .setTensors(tensors)
                .setLabels(labels)
                .setProducer(producer)
                .build();
    }

    static TensorForm form(WeightForm form) {
        EncodingRequestKind kind;
        String target = null;
        if (form.encoding() instanceof EncodingRequest.DequantizeTo dequantize) {
            kind = EncodingRequestKind.DEQUANTIZE_TO;
            target = dequantize.dtype().name();
        } else if (form.encoding() instanceof EncodingRequest.RequantizeTo requantize) {
            kind = EncodingRequestKind.REQUANTIZE_TO;
            target = requantize.encoding().spec();
        } else {
            kind = EncodingRequestKind.KEEP;
        }
        return TensorForm.newBuilder().setEncoding(kind).setTarget(target)
                .setByteOrder(TensorByteOrder.valueOf(form.order().name()))
                .setShapeOrientation(TensorShapeOrientation.valueOf(form.shape().name()))
                .setResidency(TensorResidency.valueOf(form.residency().name()))
                .build();
    }
}
