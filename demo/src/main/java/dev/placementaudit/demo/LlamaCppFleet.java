package dev.placementaudit.demo;

import dev.placementaudit.core.format.GgmlType;
import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.producer.llamacpp.LlamaCppAudit;
import dev.placementaudit.producer.llamacpp.LlamaCppEvents;
import dev.placementaudit.producer.llamacpp.LlamaCppRun;
import dev.placementaudit.producer.model.DeploymentTarget;
import dev.placementaudit.producer.model.ModelFiles;
import dev.placementaudit.producer.model.Platforms;
import dev.placementaudit.producer.publish.PlacementEvents;
import dev.placementaudit.producer.sample.TinyLlamaFile;
import dev.placementaudit.store.query.AuditQueries;
import dev.placementaudit.store.regression.RootCauses;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The demo's llama.cpp deployments, loaded by real llama.cpp: three boxes whose r1 ships a tiny llama in Q8_0 and r2 its
 * Q4_0 requantisation; two map the file, one runs with mmap off. Each distinct load (file and mmap) is made once, in a
 * child JVM, while the simulated fleet is published; each deployment's load is then published with llama.cpp named as
 * its runtime. Where llama.cpp cannot run here (no native library for this platform), the demo says so and goes on.
 */
final class LlamaCppFleet {
    static final String MODEL = "tiny-llama";
    static final List<String> DEPLOYMENTS = List.of("llama-box-1", "llama-box-2", "llama-box-3");
    private static final Duration LOAD_TIMEOUT = Duration.ofMinutes(2);

    private final Path q8;
    private final Path q4;
    private final CompletableFuture<Map<String, LlamaCppAudit>> loads;
    private final ExecutorService pool = Executors.newFixedThreadPool(2, r -> {
        Thread t = new Thread(r, "demo-llama.cpp");
        t.setDaemon(true);
        return t;
    });

    /** Writes the two files and starts the four loads, two at a time. */
    LlamaCppFleet(Path dir) throws Exception {
        Files.createDirectories(dir);
        q8 = dir.resolve("tiny-q8_0.gguf");
        q4 = dir.resolve("tiny-q4_0.gguf");
        TinyLlamaFile.write(GgmlType.Q8_0, 11, q8);
        TinyLlamaFile.write(GgmlType.Q4_0, 11, q4);
        List<CompletableFuture<Map.Entry<String, LlamaCppAudit>>> each = new ArrayList<>();
        for (Path file : List.of(q8, q4)) {
            for (boolean mmap : List.of(true, false)) {
                each.add(CompletableFuture.supplyAsync(() -> Map.entry(key(file, mmap), LlamaCppAudit.of(file, LlamaCppRun.load(file, mmap, 0,
                        LOAD_TIMEOUT))), pool));
            }
        }
        loads = CompletableFuture.allOf(each.toArray(CompletableFuture[]::new))
                .thenApply(v -> Map.ofEntries(each.stream().map(CompletableFuture::join).toArray(Map.Entry[]::new)));
    }

    private static String key(Path file, boolean mmap) {
        return file.getFileName() + (mmap ? "" : " --no-mmap");
    }

    /** Each deployment's r1 and r2 published; how many loads, or 0 with the reason printed when llama.cpp could not run here. */
    int publish(PlacementEvents events, PrintWriter out) {
        Map<String, LlamaCppAudit> audits;
        try {
            audits = loads.join();
        } catch (RuntimeException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            out.println("  (the llama.cpp deployments are left out: " + cause.getMessage() + ")");
            return 0;
        } finally {
            pool.shutdown();
        }
        int published = 0;
        Instant at = Instant.parse("2026-11-01T06:00:00Z");
        for (String deployment : DEPLOYMENTS) {
            boolean mmap = !deployment.equals("llama-box-3");
            for (String release : List.of("r1", "r2")) {
                Path file = release.equals("r1") ? q8 : q4;
                LlamaCppEvents.Events made = LlamaCppEvents.of(audits.get(key(file, mmap)), ModelFiles.read(file),
                        new DeploymentTarget(deployment, "edge-eu", deployment, release, "native", Platforms.byName("native")), MODEL,
                        UUID.nameUUIDFromBytes((deployment + "/" + release).getBytes(java.nio.charset.StandardCharsets.UTF_8)),
                        at = at.plusSeconds(3600), Map.of("source", "llama.cpp"), "placement-audit demo");
                events.publish(made.load());
                events.publishObservation(made.observation());
                published++;
            }
        }
        return published;
    }

    /** What llama.cpp did on the first box from r1 to r2, and why, in the report. */
    static void report(PrintWriter out, AuditQueries queries) throws Exception {
        var diff = queries.diff(DEPLOYMENTS.get(0), MODEL, "r1", "r2");
        if (diff.isEmpty()) {
            return;
        }
        out.println();
        out.printf(Locale.ROOT, "LLAMA.CPP %s %s r1 (Q8_0) -> r2 (Q4_0), loaded by real llama.cpp: %s%n", DEPLOYMENTS.get(0), MODEL,
                diff.get().to().runtime());
        out.printf(Locale.ROOT, "  off-heap %s -> %s, mapped %s -> %s%n", ByteSizes.format(diff.get().from().offHeapBytes()),
                ByteSizes.format(diff.get().to().offHeapBytes()), ByteSizes.format(diff.get().from().mappedBytes()),
                ByteSizes.format(diff.get().to().mappedBytes()));
        for (RootCauses.CauseGroup cause : diff.get().causes()) {
            out.println("  " + cause.cause());
            cause.tensors().stream().limit(2).forEach(t -> out.printf(Locale.ROOT, "      %-28s %s%n", t.name(), t.placement()));
        }
        diff.get().findings().stream().filter(f -> f.tensorName() != null && "HOST_OFFHEAP".equals(f.afterDomain())).findFirst()
                .ifPresent(f -> out.println("  why " + f.tensorName() + " moved, as llama.cpp's rules say: "
                        + f.afterReason().substring(f.afterReason().indexOf(" \u2014 ") + 3)));
    }
}
