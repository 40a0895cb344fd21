package dev.placementaudit.resolution.llamacpp;

import dev.placementaudit.core.format.DType;
import dev.placementaudit.core.format.GgmlType;
import dev.placementaudit.core.placement.AllocationDecision;
import dev.placementaudit.core.placement.AllocationSpec;
import dev.placementaudit.core.placement.MemoryDomain;
import dev.placementaudit.core.placement.PlanTensor;
import dev.placementaudit.core.placement.ReasonCode;
import dev.placementaudit.core.placement.ScopeKind;
import dev.placementaudit.events.RuntimeIdentity;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.resolution.ValidLoad;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A load that llama.cpp made, planned as llama.cpp plans it ({@link LlamaCppPolicy}) and written as the worker writes
 * every decision: a weight in the file's pages is {@code MMAP_FILE} ({@code MAPPED_OK}); a weight llama.cpp repacks is
 * copied into host memory outside any managed heap ({@code HOST_OFFHEAP}; with mmap on, its mapping was refused as a
 * {@code KERNEL_FEED_COPY}: a kernel's byte order is a copy of the file's bytes); with mmap off every weight is copied
 * ({@code HOST_OFFHEAP}, no mapping asked). A native runtime has no managed heap: its off-heap threshold is 1 byte. The
 * reason text is the policy's own, naming the build, the CPU and the layout.
 */
public final class LlamaCppPlanning {
    public static final String RUNTIME = "llama.cpp";

    private LlamaCppPlanning() {
    }

    /** The runtime as a load's context names it: {@code llama.cpp b4916 AARCH64_REPACK,AVX2 mmap}; null for none. */
    public static String context(RuntimeIdentity runtime) {
        if (runtime == null) {
            return null;
        }
        return runtime.getName() + " " + runtime.getBuild() + " " + CpuFeatures.fromNames(runtime.getCpuFeatures()).describe()
                + (runtime.getMmap() ? " mmap" : " no-mmap");
    }

    /** Whether the load names a runtime whose rules this class models. */
    public static boolean plans(RuntimeIdentity runtime) {
        return runtime != null && RUNTIME.equals(runtime.getName());
    }

    /**
     * The digest of the rules that decide a llama.cpp load: the profile's and platform's digest with the build modelled,
     * the CPU's features and mmap, so two loads' decisions share a digest only when the same rules made them.
     */
    public static String policyDigest(String profileAndPlatform, RuntimeIdentity runtime) {
        String rules = String.join("\0", profileAndPlatform, RUNTIME, LlamaCppPolicy.BUILD, CpuFeatures.fromNames(runtime.getCpuFeatures()).describe(),
                Boolean.toString(runtime.getMmap()));
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
                    .digest(rules.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Every tensor's decision, in tensor order. */
    public static List<AllocationDecision> decide(ValidLoad load) {
        RuntimeIdentity runtime = load.event().getRuntime();
        CpuFeatures cpu = CpuFeatures.fromNames(runtime.getCpuFeatures());
        boolean mmap = runtime.getMmap() && load.policy().platform().supportsMappedFiles();
        List<TensorInfo> infos = load.event().getTensors();
        List<LlamaCppPolicy.Weight> weights = new ArrayList<>(infos.size());
        for (int i = 0; i < infos.size(); i++) {
            TensorInfo info = infos.get(i);
            weights.add(new LlamaCppPolicy.Weight(info.getName(), ggmlType(info), info.getShape().stream().mapToLong(Long::longValue).toArray(),
                    info.getFileOffset() == null ? 0 : info.getFileOffset()));
        }
        LlamaCppPolicy.Plan plan = LlamaCppPolicy.plan(weights, cpu, mmap);
        String rules = "llama.cpp " + LlamaCppPolicy.BUILD + (runtime.getBuild().equals(LlamaCppPolicy.BUILD) ? ""
                : " rules (the load's build " + runtime.getBuild() + " is not modelled; the newest that is)") + " on " + cpu.name() + ": ";
        List<AllocationDecision> decided = new ArrayList<>(infos.size());
        for (int i = 0; i < infos.size(); i++) {
            decided.add(decision(load.tensors().get(i), plan.weights().get(i), mmap, rules));
        }
        return decided;
    }

    private static AllocationDecision decision(PlanTensor tensor, LlamaCppPolicy.Placed placed, boolean mmap, String rules) {
        MemoryDomain domain = placed.domain();
        AllocationSpec spec = new AllocationSpec(tensor.format(), tensor.elementCount(), domain, ScopeKind.MODEL, false, 32);
        boolean mapped = domain == MemoryDomain.MMAP_FILE;
        List<ReasonCode> blockers = !mapped && mmap ? List.of(ReasonCode.KERNEL_FEED_COPY) : List.of();
        return new AllocationDecision(tensor.name(), tensor.format(), spec, tensor.bytes(), mmap, blockers,
                mapped ? ReasonCode.MAPPED_OK : ReasonCode.ABOVE_THRESHOLD, 1, true, rules + placed.detail());
    }

    /** The ggml type of a tensor as the event names it: a block encoding by its name, a dense one by its dtype. */
    static GgmlType ggmlType(TensorInfo info) {
        Optional<GgmlType> byEncoding = GgmlType.byName(info.getEncoding());
        if (byEncoding.isPresent()) {
            return byEncoding.get();
        }
        return switch (DType.valueOf(info.getDtype())) {
            case FP32 -> GgmlType.F32;
            case FP16 -> GgmlType.F16;
            case BF16 -> GgmlType.BF16;
            default -> throw new IllegalArgumentException("tensor " + info.getName() + ": llama.cpp has no type for " + info.getDtype()
                    + " " + info.getEncoding());
        };
    }
}
