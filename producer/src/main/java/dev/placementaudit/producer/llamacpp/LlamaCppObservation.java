package dev.placementaudit.producer.llamacpp;

import dev.placementaudit.producer.gguf.GgufReader;
import dev.placementaudit.resolution.llamacpp.CpuFeatures;
import dev.placementaudit.resolution.llamacpp.LlamaCppPolicy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * A llama.cpp process this project did not start (llama-server, a service embedding llama.cpp) observed from outside:
 * its memory read from {@code /proc/<pid>}, its log read from a file when there is one, both held against the policy.
 */
public final class LlamaCppObservation {
    private LlamaCppObservation() {
    }

    /**
     * @param logFile the process's log (llama.cpp's own lines), or empty: then only the memory is held against the plan
     * @param cpu     the CPU to plan for when the log does not say (its system_info line)
     * @throws ProcessMemory.ProcessGone when the process is not there, or goes away while it is read
     */
    public static LlamaCppAudit observe(long pid, Path model, Optional<Path> logFile, CpuFeatures cpu) {
        ProcessMemory.Reading now = ProcessMemory.read(Long.toString(pid), model);
        List<String> lines = logFile.map(LlamaCppObservation::lines).orElse(List.of());
        LlamaCppLog log = LlamaCppLog.parse(lines);
        boolean mmap = lines.stream().filter(line -> line.contains("(mmap = ")).reduce((a, b) -> b)
                .map(line -> line.contains("(mmap = true)")).orElse(now.fileMappedSize() > 0);
        CpuFeatures planned = log.systemInfo().map(CpuFeatures::fromSystemInfo).orElse(cpu);
        LlamaCppPolicy.Plan plan = LlamaCppPolicy.plan(LlamaCppAudit.weights(GgufReader.read(model)), planned, mmap);
        LlamaCppRun.Result seen = new LlamaCppRun.Result(model, mmap, lines, log, Double.NaN, 0, new ProcessMemory.Reading(0, 0, 0), now, 0);
        return LlamaCppAudit.of(plan, seen);
    }

    private static List<String> lines(Path file) {
        try {
            return Files.readAllLines(file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the log " + file, e);
        }
    }
}
