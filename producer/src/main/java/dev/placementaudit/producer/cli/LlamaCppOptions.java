package dev.placementaudit.producer.cli;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.producer.gguf.GgufReader;
import dev.placementaudit.producer.llamacpp.LlamaCppAudit;
import dev.placementaudit.producer.llamacpp.LlamaCppRun;
import dev.placementaudit.resolution.llamacpp.CpuFeatures;
import dev.placementaudit.resolution.llamacpp.LlamaCppPolicy;
import dev.placementaudit.service.cli.CommandFailure;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/** {@code --runtime llama.cpp} and what goes with it: the CPU to plan for, mmap off; the plan and the audit printed. */
final class LlamaCppOptions {
    static final String RUNTIME = "llama.cpp";

    @Option(names = "--runtime", defaultValue = "skainet", description = "whose placement rules: skainet (the AllocationResolver) or llama.cpp "
            + "(its CPU backend, build " + LlamaCppPolicy.BUILD + ") (default: ${DEFAULT-VALUE})") String runtime;

    @Option(names = "--cpu", description = "with --runtime llama.cpp: the CPU to plan for: avx2, x86-sse, arm-dotprod, arm-i8mm, arm-sve256 "
            + "(explain default: avx2; load plans for the CPU llama.cpp reports; observe for the one its log reports, else this, else avx2)")
    String cpu;

    @Option(names = "--versus", paramLabel = "CPU", description = "with explain --runtime llama.cpp: what would move on this other CPU "
            + "(before moving a fleet to ARM servers, say): the weights placed differently and the bytes that change domain") String versus;

    @Option(names = "--no-mmap", description = "with --runtime llama.cpp: load as llama.cpp --no-mmap does (every weight copied)") boolean noMmap;

    boolean llamaCpp() {
        if (runtime.equals(RUNTIME)) {
            return true;
        }
        if (!runtime.equals("skainet")) {
            throw new CommandFailure("no runtime named '" + runtime + "'; there are skainet and llama.cpp");
        }
        if (cpu != null || noMmap || versus != null) {
            throw new CommandFailure((cpu != null ? "--cpu" : noMmap ? "--no-mmap" : "--versus") + " goes with --runtime llama.cpp");
        }
        return false;
    }

    CpuFeatures cpuFeatures() {
        return named(cpu == null ? "avx2" : cpu);
    }

    private static CpuFeatures named(String name) {
        try {
            return CpuFeatures.named(name);
        } catch (IllegalArgumentException e) {
            throw new CommandFailure(e.getMessage());
        }
    }

    /** {@code explain --runtime llama.cpp}: every weight's buffer and reason, then each buffer's size. */
    int explain(PrintWriter out, Path file, boolean all, boolean json) {
        List<LlamaCppPolicy.Weight> weights = LlamaCppAudit.weights(GgufReader.read(file));
        LlamaCppPolicy.Plan plan = LlamaCppPolicy.plan(weights, cpuFeatures(), !noMmap);
        if (json) {
            JsonOut.print(out, versus == null ? LlamaCppExplained.plan(file, plan)
                    : LlamaCppExplained.versus(file, plan, LlamaCppPolicy.plan(weights, named(versus), !noMmap)));
            return 0;
        }
        if (versus != null) {
            return versus(out, file, plan, LlamaCppPolicy.plan(weights, named(versus), !noMmap), all);
        }
        out.printf(Locale.ROOT, "%s: %d weights; llama.cpp %s on %s, mmap %s%n", file.getFileName(), plan.weights().size(), plan.build(),
                plan.cpu().name(), plan.mmap() ? "on" : "off");
        new TreeMap<>(plan.buffers()).forEach((buffer, bytes) -> out.printf(Locale.ROOT, "  %-12s %10s  %s%n", buffer, ByteSizes.format(bytes),
                buffer.equals(LlamaCppPolicy.MAPPED) ? "MMAP_FILE" : "HOST_OFFHEAP"));
        plan.weights().stream().sorted(Comparator.comparingLong((LlamaCppPolicy.Placed p) -> p.weight().bytes()).reversed())
                .limit(all ? Long.MAX_VALUE : 20)
                .forEach(p -> out.printf(Locale.ROOT, "  %-28s %-6s %10s -> %-11s %s%n", p.weight().name(), p.weight().type(),
                        ByteSizes.format(p.weight().bytes()), p.buffer(), p.detail()));
        return 0;
    }

    /** {@code load --runtime llama.cpp}: the model loaded by real llama.cpp, per buffer planned, reported and measured; the audit. */
    LlamaCppAudit load(PrintWriter out, Path file, int generate) {
        if (cpu != null) {
            throw new CommandFailure("load plans for the CPU llama.cpp reports; --cpu is for explain");
        }
        LlamaCppRun.Result run;
        try {
            run = LlamaCppRun.load(file, !noMmap, generate, Duration.ofMinutes(10));
        } catch (LlamaCppRun.LlamaCppException e) {
            throw new CommandFailure(e.exitCode(), e.getMessage(), e);
        }
        LlamaCppAudit audit = LlamaCppAudit.of(file, run);
        out.printf(Locale.ROOT, "loaded %s through llama.cpp %s in %.2f s (mmap %s; CPU %s)%n", file.getFileName(), audit.plan().build(),
                run.loadMillis() / 1000, run.mmap() ? "on" : "off", audit.plan().cpu().describe());
        buffers(out, audit, true);
        out.printf(Locale.ROOT, "  measured: file pages resident %s of %s mapped; anonymous memory grown by %s (copies, KV cache, compute)%n",
                ByteSizes.format(run.after().fileMappedResident()), ByteSizes.format(run.after().fileMappedSize()),
                ByteSizes.format(run.anonymousGrowth()));
        findings(out, audit);
        if (run.generatedTokens() > 0) {
            out.printf(Locale.ROOT, "  generated %d tokens%n", run.generatedTokens());
        }
        verdict(out, audit);
        return audit;
    }

    /** {@code observe}: a process's memory (and log) against the plan. */
    void printObservation(PrintWriter out, long pid, Path file, LlamaCppAudit audit, boolean withLog) {
        out.printf(Locale.ROOT, "process %d holding %s: llama.cpp %s policy, mmap %s, CPU %s%n", pid, file.getFileName(), audit.plan().build(),
                audit.plan().mmap() ? "on" : "off", audit.plan().cpu().describe() + (audit.run().log().systemInfo().isPresent() ? " (its log)" : " (--cpu)"));
        buffers(out, audit, withLog);
        out.printf(Locale.ROOT, "  measured: file pages resident %s of %s mapped; anonymous memory resident %s (the whole process's)%n",
                ByteSizes.format(audit.run().after().fileMappedResident()), ByteSizes.format(audit.run().after().fileMappedSize()),
                ByteSizes.format(audit.run().after().anonymousResident()));
        long span = audit.plan().buffers().getOrDefault(LlamaCppPolicy.MAPPED, 0L);
        if (audit.plan().mmap() && audit.run().after().fileMappedSize() == 0) {
            out.println("  finding: the plan maps " + ByteSizes.format(span) + " of the file, but the process maps none of it (another file, or mmap off)");
        }
        findings(out, audit);
        if (withLog) {
            verdict(out, audit);
        } else {
            out.println("no log given: buffers and repacks were not checked (--log FILE)");
        }
    }

    private static void buffers(PrintWriter out, LlamaCppAudit audit, boolean reported) {
        out.printf(Locale.ROOT, "  %-12s %-13s %12s %12s%n", "buffer", "domain", "planned", "llama.cpp");
        for (LlamaCppAudit.BufferCheck b : audit.buffers()) {
            out.printf(Locale.ROOT, "  %-12s %-13s %12s %12s%s%n", b.buffer(), b.buffer().equals(LlamaCppPolicy.MAPPED) ? "MMAP_FILE" : "HOST_OFFHEAP",
                    ByteSizes.format(b.plannedBytes()), b.reportedMiB() == null ? "-" : String.format(Locale.ROOT, "%.2f MiB", b.reportedMiB()),
                    reported && b.diverged() ? "  DIVERGED" : "");
        }
    }

    private static void findings(PrintWriter out, LlamaCppAudit audit) {
        Map<String, Long> repacks = new TreeMap<>();
        audit.plan().weights().forEach(p -> p.layout().ifPresent(layout -> repacks.merge(layout, p.weight().bytes(), Long::sum)));
        repacks.forEach((layout, bytes) -> out.printf(Locale.ROOT, "  repacked as %s: %s%n", layout, ByteSizes.format(bytes)));
        if (audit.repackedFilePagesResident() > 0) {
            out.printf(Locale.ROOT, "  finding: %s of repacked weights' file pages stay mapped and resident beside their copies (held twice: "
                    + "inside the CPU_Mapped span; --no-mmap gives them back)%n", ByteSizes.format(audit.repackedFilePagesResident()));
        }
    }

    private static void verdict(PrintWriter out, LlamaCppAudit audit) {
        if (audit.diverged()) {
            out.println("DIVERGED from the llama.cpp " + audit.plan().build() + " policy:");
            audit.divergences().forEach(line -> out.println("  " + line));
        } else {
            out.println("as planned: every buffer and every repack as the llama.cpp " + audit.plan().build() + " policy says");
        }
    }

    /** Two plans of one file side by side: each buffer on both CPUs, then every weight placed differently. */
    private static int versus(PrintWriter out, Path file, LlamaCppPolicy.Plan from, LlamaCppPolicy.Plan to, boolean all) {
        out.printf(Locale.ROOT, "%s: llama.cpp %s on %s versus %s, mmap %s%n", file.getFileName(), from.build(), from.cpu().name(), to.cpu().name(),
                from.mmap() ? "on" : "off");
        java.util.Set<String> buffers = new java.util.TreeSet<>(from.buffers().keySet());
        buffers.addAll(to.buffers().keySet());
        out.printf(Locale.ROOT, "  %-12s %12s %12s%n", "buffer", from.cpu().name(), to.cpu().name());
        buffers.forEach(b -> out.printf(Locale.ROOT, "  %-12s %12s %12s%n", b, ByteSizes.format(from.buffers().getOrDefault(b, 0L)),
                ByteSizes.format(to.buffers().getOrDefault(b, 0L))));
        List<LlamaCppExplained.Changed> changed = LlamaCppExplained.changes(from, to);
        long moved = changed.stream().filter(LlamaCppExplained.Changed::domainChanges).mapToLong(c -> c.from().weight().bytes()).sum();
        List<String> lines = new java.util.ArrayList<>();
        for (LlamaCppExplained.Changed c : changed) {
            LlamaCppPolicy.Placed a = c.from();
            LlamaCppPolicy.Placed b = c.to();
            lines.add(String.format(Locale.ROOT, "  %-28s %-6s %10s  %s -> %s", a.weight().name(), a.weight().type(), ByteSizes.format(a.weight().bytes()),
                    a.layout().map(l -> a.buffer() + " (" + l + ")").orElse(a.buffer()), b.layout().map(l -> b.buffer() + " (" + l + ")").orElse(b.buffer())));
        }
        out.printf(Locale.ROOT, "%d weights placed differently, %s changing domain (file pages <-> host memory)%n", changed.size(),
                ByteSizes.format(moved));
        lines.stream().limit(all ? Long.MAX_VALUE : 20).forEach(out::println);
        return 0;
    }
}
