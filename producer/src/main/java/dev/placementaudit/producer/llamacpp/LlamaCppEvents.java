package dev.placementaudit.producer.llamacpp;

import dev.placementaudit.core.placement.KvCacheMode;
import dev.placementaudit.core.placement.PlannerProfile;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ObservationMethod;
import dev.placementaudit.events.ObservedDomain;
import dev.placementaudit.events.ObservedTensor;
import dev.placementaudit.events.RuntimeDecision;
import dev.placementaudit.events.RuntimeDomain;
import dev.placementaudit.events.RuntimeIdentity;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.producer.model.DeploymentTarget;
import dev.placementaudit.producer.model.ModelLoadedBuilder;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.resolution.llamacpp.LlamaCppPlanning;
import dev.placementaudit.resolution.llamacpp.LlamaCppPolicy;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * A load through real llama.cpp as the pipeline takes it: the {@code ModelLoaded} names the runtime (llama.cpp, the
 * build, the CPU features it reported, mmap) so the worker plans it under llama.cpp's rules, and carries each weight's
 * placement as llama.cpp's log gives it (repacked with a layout: host memory; else the file's pages, or a copy with mmap
 * off), so a weight the log places otherwise than the policy is {@code DIVERGED}; the {@code LoadObserved} carries what
 * the process measured (the file's mapping and its residency, the anonymous memory the load added).
 */
public final class LlamaCppEvents {
    /** How the observation was measured, as the store shows it. */
    public static final String METHOD = "llama.cpp-log+proc-smaps";

    public record Events(ModelLoaded load, LoadObserved observation) {
    }

    private LlamaCppEvents() {
    }

    /** A native runtime holds no managed heap: every copy is off it (a threshold of 1 byte); with mmap off no weight is mapped. */
    public static PlannerProfile profile(boolean mmap) {
        return new PlannerProfile(mmap ? "llama.cpp" : "llama.cpp-no-mmap", PlannerProfile.RESERVE_NATIVE, PlannerProfile.DEFAULT_PREFILL_CHUNK,
                KvCacheMode.BF16, 1.0, 1, 0.05, false, mmap);
    }

    public static Events of(LlamaCppAudit audit, StoredModel stored, DeploymentTarget target, String modelId, UUID loadId, Instant at,
                            Map<String, String> labels, String producer) {
        LlamaCppRun.Result run = audit.run();
        ModelLoaded bare = ModelLoadedBuilder.build(loadId, at, modelId, stored, target, profile(run.mmap()), Map.of(), labels, producer);
        List<TensorInfo> tensors = new ArrayList<>(bare.getTensors().size());
        List<ObservedTensor> observed = new ArrayList<>(bare.getTensors().size());
        for (TensorInfo tensor : bare.getTensors()) {
            String layout = run.log().repacked().get(tensor.getName());
            RuntimeDomain domain = layout != null || !run.mmap() ? RuntimeDomain.HOST_OFFHEAP : RuntimeDomain.MMAP_FILE;
            String reason = layout != null ? LlamaCppPolicy.REPACK + ": repack with " + layout : run.mmap() ? LlamaCppPolicy.MAPPED : LlamaCppPolicy.HOST;
            tensors.add(TensorInfo.newBuilder(tensor).setRuntime(RuntimeDecision.newBuilder().setDomain(domain)
                    .setResidentBytes(tensor.getStoredBytes()).setReason(reason).build()).build());
            observed.add(ObservedTensor.newBuilder().setName(tensor.getName()).setDomain(ObservedDomain.valueOf(domain.name()))
                    .setResidentBytes(tensor.getStoredBytes()).build());
        }
        ModelLoaded load = ModelLoaded.newBuilder(bare).setTensors(tensors)
                .setRuntime(RuntimeIdentity.newBuilder().setName(LlamaCppPlanning.RUNTIME).setBuild(audit.plan().build())
                        .setCpuFeatures(audit.plan().cpu().names()).setMmap(run.mmap()).build())
                .build();
        LoadObserved observation = LoadObserved.newBuilder()
                .setLoadId(loadId)
                .setDeploymentId(target.deploymentId())
                .setObservedAt(at.plusMillis(Math.round(run.loadMillis() + run.measuringMillis())))
                .setMethod(ObservationMethod.newBuilder().setName(METHOD).setRuntime("llama.cpp " + audit.plan().build() + " (de.kherud:llama) on "
                        + System.getProperty("os.name") + " " + System.getProperty("os.arch")).setLimits(List.of(
                        "per-weight placement as llama.cpp's log names it (repacks); not measured weight by weight",
                        "anonymous memory grown includes llama.cpp's KV cache and compute buffers, not only copied weights",
                        "no managed heap or JVM buffer pools: llama.cpp allocates natively")).build())
                .setFileMappedBytes(run.after().fileMappedSize())
                .setFileResidentBytes(run.after().fileMappedResident())
                .setAnonRssDeltaBytes(run.anonymousGrowth())
                .setTensors(observed)
                .setProducer(producer)
                .build();
        return new Events(load, observation);
    }
}
