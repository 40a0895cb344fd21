package dev.placementaudit.producer.llamacpp;

import dev.placementaudit.producer.gguf.GgufFile;
import dev.placementaudit.producer.gguf.GgufReader;
import dev.placementaudit.producer.gguf.GgufTensor;
import dev.placementaudit.producer.model.ModelFileException;
import dev.placementaudit.resolution.llamacpp.CpuFeatures;
import dev.placementaudit.resolution.llamacpp.LlamaCppPolicy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * A load through llama.cpp held against the llama.cpp policy: per buffer, planned by the policy, reported by
 * llama.cpp's log, and the process's measured memory; per weight, the policy's repack decision against the one the log
 * names. A buffer whose reported size is off the plan by more than llama.cpp's rounding to 0.01 MiB, or a weight the log
 * and the policy place differently, makes the load {@code DIVERGED}.
 */
public record LlamaCppAudit(LlamaCppPolicy.Plan plan, LlamaCppRun.Result run, List<BufferCheck> buffers, List<WeightCheck> weights,
                            long repackedFilePagesResident) {
    private static final double MIB = 1024.0 * 1024.0;
    /** llama.cpp prints buffer sizes with two decimals: anything within half of the last digit is the same size. */
    private static final double ROUNDING_MIB = 0.005 + 1e-9;

    /** One buffer: the policy's bytes (0 when it plans none), llama.cpp's reported MiB (null when it reported none). */
    public record BufferCheck(String buffer, long plannedBytes, Double reportedMiB) {
        public boolean diverged() {
            return reportedMiB == null ? plannedBytes > 0 : Math.abs(plannedBytes / MIB - reportedMiB) > ROUNDING_MIB;
        }
    }

    /** One weight: the layout the policy repacks it to and the one llama.cpp's log names (empty: kept as stored). */
    public record WeightCheck(String name, String plannedBuffer, Optional<String> plannedLayout, Optional<String> loggedLayout) {
        public boolean diverged() {
            return !plannedLayout.equals(loggedLayout);
        }
    }

    /** The weights of a GGUF as the policy takes them. */
    public static List<LlamaCppPolicy.Weight> weights(GgufFile file) {
        List<LlamaCppPolicy.Weight> weights = new ArrayList<>();
        for (GgufTensor t : file.tensors()) {
            if (t.type().isEmpty()) {
                throw new ModelFileException(file.path(), t.absoluteOffset(), "tensor " + t.name() + " has ggml type " + t.typeId()
                        + ", which llama.cpp " + LlamaCppPolicy.BUILD + " does not know");
            }
            weights.add(new LlamaCppPolicy.Weight(t.name(), t.type().get(), t.dims().stream().mapToLong(Long::longValue).toArray(), t.absoluteOffset()));
        }
        return weights;
    }

    /** The plan for the CPU llama.cpp reported (its system_info line), held against what it did. */
    public static LlamaCppAudit of(Path model, LlamaCppRun.Result run) {
        GgufFile file = GgufReader.read(model);
        CpuFeatures cpu = run.log().systemInfo().map(CpuFeatures::fromSystemInfo)
                .orElseThrow(() -> new IllegalStateException("llama.cpp's log has no system_info line: which CPU it planned for is unknown"));
        return of(LlamaCppPolicy.plan(weights(file), cpu, run.mmap()), run);
    }

    public static LlamaCppAudit of(LlamaCppPolicy.Plan plan, LlamaCppRun.Result run) {
        Set<String> names = new LinkedHashSet<>(List.of(LlamaCppPolicy.REPACK, LlamaCppPolicy.MAPPED, LlamaCppPolicy.HOST));
        names.addAll(plan.buffers().keySet());
        names.addAll(run.log().buffersMiB().keySet());
        List<BufferCheck> buffers = new ArrayList<>();
        for (String name : names) {
            long planned = plan.buffers().getOrDefault(name, 0L);
            Double reported = run.log().buffersMiB().get(name);
            if (planned > 0 || reported != null) {
                buffers.add(new BufferCheck(name, planned, reported));
            }
        }
        List<WeightCheck> weights = plan.weights().stream().map(p -> new WeightCheck(p.weight().name(), p.buffer(), p.layout(),
                Optional.ofNullable(run.log().repacked().get(p.weight().name())))).toList();
        return new LlamaCppAudit(plan, run, List.copyOf(buffers), weights, run.mmap() ? heldTwice(plan, run.after()) : 0);
    }

    /**
     * The file pages of repacked weights that stay mapped and resident beside their copies: llama.cpp keeps one mapping
     * spanning the first to the last mapped weight, and unmaps only what lies outside it, so a weight repacked from inside
     * the span keeps its pages (llama.cpp #16761). smaps gives the mapping's residency as a whole, so the span's share is
     * taken as resident in that proportion: an estimate, exact when the mapping is all resident (llama.cpp populates it).
     */
    static long heldTwice(LlamaCppPolicy.Plan plan, ProcessMemory.Reading after) {
        long first = Long.MAX_VALUE;
        long last = -1;
        for (LlamaCppPolicy.Placed p : plan.weights()) {
            if (p.buffer().equals(LlamaCppPolicy.MAPPED)) {
                first = Math.min(first, p.weight().fileOffset());
                last = Math.max(last, p.weight().fileOffset() + p.weight().bytes());
            }
        }
        long inside = 0;
        for (LlamaCppPolicy.Placed p : plan.weights()) {
            if (p.layout().isPresent() && p.weight().fileOffset() >= first && p.weight().fileOffset() + p.weight().bytes() <= last) {
                inside += p.weight().bytes();
            }
        }
        if (inside == 0 || after.fileMappedSize() == 0) {
            return 0;
        }
        double resident = Math.min(1.0, (double) after.fileMappedResident() / after.fileMappedSize());
        return Math.round(inside * resident);
    }

    public boolean diverged() {
        return buffers.stream().anyMatch(BufferCheck::diverged) || weights.stream().anyMatch(WeightCheck::diverged);
    }

    /** One line per divergence: the buffer or weight and both figures. */
    public List<String> divergences() {
        List<String> out = new ArrayList<>();
        buffers.stream().filter(BufferCheck::diverged).forEach(b -> out.add(String.format(java.util.Locale.ROOT,
                "buffer %s: planned %.2f MiB, llama.cpp reported %s", b.buffer(), b.plannedBytes() / MIB,
                b.reportedMiB() == null ? "none" : String.format(java.util.Locale.ROOT, "%.2f MiB", b.reportedMiB()))));
        weights.stream().filter(WeightCheck::diverged).forEach(w -> out.add("weight " + w.name() + ": planned "
                + w.plannedLayout().map(l -> "repacked as " + l).orElse("kept in " + w.plannedBuffer()) + ", llama.cpp "
                + w.loggedLayout().map(l -> "repacked it as " + l).orElse("did not repack it")));
        return out;
    }
}
