package dev.placementaudit.producer.llamacpp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Runs {@link LlamaCppProbe} in a child JVM on the same class path and reads its report. Every way it can fail ends in a
 * {@link LlamaCppException} whose message says what was tried and what happened, never a half report.
 */
public final class LlamaCppRun {
    /** What one load through llama.cpp gave. */
    public record Result(Path model, boolean mmap, List<String> lines, LlamaCppLog log, double loadMillis, double measuringMillis,
                         ProcessMemory.Reading before, ProcessMemory.Reading after, int generatedTokens) {
        /** Anonymous memory the load added to the process: repacked and copied weights, KV cache, compute buffers. */
        public long anonymousGrowth() {
            return Math.max(0, after.anonymousResident() - before.anonymousResident());
        }
    }

    /** A load through llama.cpp that did not give a report, with why. */
    public static final class LlamaCppException extends RuntimeException {
        private final int exitCode;

        public LlamaCppException(String message, int exitCode) {
            super(message);
            this.exitCode = exitCode;
        }

        /** 2: llama.cpp refused the file; 3: no native library; 1: anything else (a crash, a timeout). */
        public int exitCode() {
            return exitCode;
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    private LlamaCppRun() {
    }

    public static Result load(Path model, boolean mmap, int generate, Duration timeout) {
        return load(model, mmap, generate, timeout, List.of());
    }

    /** @param jvmOptions for the child JVM (e.g. {@code -Dde.kherud.llama.lib.path=DIR}, a llama.cpp library of one's own) */
    public static Result load(Path model, boolean mmap, int generate, Duration timeout, List<String> jvmOptions) {
        List<String> extra = new ArrayList<>();
        if (!mmap) {
            extra.add("--no-mmap");
        }
        if (generate > 0) {
            extra.addAll(List.of("--generate", Integer.toString(generate)));
        }
        Child child = run(model, jvmOptions, extra, timeout);
        return parse(model, mmap, child.exit(), child.report(), child.direct());
    }

    /** llama.cpp's own load time, nothing measured and its logging as it comes: the baseline the measuring is timed against. */
    public static double bareLoadMillis(Path model, Duration timeout) {
        Child child = run(model, List.of(), List.of("--bare"), timeout);
        try {
            return JSON.readTree(child.report()).path("loadMillis").asDouble();
        } catch (IOException e) {
            throw new LlamaCppException("the llama.cpp child's report cannot be read: " + e.getMessage(), 1);
        }
    }

    /** What the child printed: its report (the JSON after the marker), and llama.cpp's lines that went straight to its streams. */
    private record Child(int exit, String report, List<String> direct) {
    }

    private static Child run(Path model, List<String> jvmOptions, List<String> extra, Duration timeout) {
        if (!Files.isRegularFile(model)) {
            throw new LlamaCppException("no model file at " + model, 2);
        }
        // A short-lived JVM: the quick compiler only, no perf data file, the native library taken out of its jar once.
        List<String> command = new ArrayList<>(List.of(javaCommand(), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"));
        if (jvmOptions.stream().noneMatch(option -> option.startsWith("-Dde.kherud.llama."))) {
            NativeLibraryCache.folder().ifPresent(folder -> command.add("-Dde.kherud.llama.lib.path=" + folder));
        }
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), LlamaCppProbe.class.getName(), model.toAbsolutePath().toString()));
        command.addAll(extra);
        Process child;
        try {
            child = new ProcessBuilder(command).start();
        } catch (IOException e) {
            throw new LlamaCppException("cannot start a JVM to load " + model + " through llama.cpp: " + e.getMessage(), 1);
        }
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> drain(child.getInputStream()));
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> drain(child.getErrorStream()));
        try {
            if (!child.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                child.destroyForcibly();
                throw new LlamaCppException("llama.cpp did not finish loading " + model + " within " + timeout.toSeconds() + " s; stopped it", 1);
            }
        } catch (InterruptedException e) {
            child.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new LlamaCppException("interrupted while llama.cpp loaded " + model, 1);
        }
        int exit = child.exitValue();
        String stdout = out.join();
        String report = stdout.lines().filter(line -> line.startsWith(LlamaCppProbe.RESULT)).reduce((a, b) -> b).orElse(null);
        if (report == null) {
            String tail = tail(stdout + err.join(), 5);
            throw new LlamaCppException("llama.cpp crashed loading " + model + " (" + (exit > 128 ? "signal " + (exit - 128) : "exit " + exit)
                    + "); nothing was published." + (tail.isBlank() ? "" : " Its last words:\n" + tail), 1);
        }
        // Some of llama.cpp's lines (system_info among them) bypass the log callback and go straight to the child's streams.
        List<String> direct = new ArrayList<>(stdout.lines().filter(line -> !line.startsWith(LlamaCppProbe.RESULT)).toList());
        err.join().lines().forEach(direct::add);
        return new Child(exit, report.substring(LlamaCppProbe.RESULT.length()), direct);
    }

    private static Result parse(Path model, boolean mmap, int exit, String json, List<String> direct) {
        JsonNode node;
        try {
            node = JSON.readTree(json);
        } catch (IOException e) {
            throw new LlamaCppException("the llama.cpp child's report cannot be read: " + e.getMessage(), 1);
        }
        List<String> lines = new ArrayList<>();
        node.path("log").forEach(line -> lines.add(line.asText()));
        lines.addAll(direct);
        if (exit == 2) {
            throw new LlamaCppException("llama.cpp refused " + model + ": " + reason(lines, node.path("error").asText()), 2);
        }
        if (exit == 3) {
            throw new LlamaCppException("no llama.cpp native library for " + node.path("platform").asText() + " in de.kherud:llama: "
                    + node.path("error").asText(), 3);
        }
        if (exit != 0) {
            throw new LlamaCppException("llama.cpp's child exited " + exit + " loading " + model, 1);
        }
        return new Result(model, mmap, List.copyOf(lines), LlamaCppLog.parse(lines), node.path("loadMillis").asDouble(), node.path("measuringMillis").asDouble(),
                reading(node.path("before")), reading(node.path("after")), node.path("generatedTokens").asInt(0));
    }

    /** llama.cpp's own words for a refusal: its error lines, else the binding's message. */
    private static String reason(List<String> lines, String fallback) {
        List<String> errors = lines.stream().filter(line -> line.startsWith("ERROR ")).map(line -> line.substring(6).trim()).toList();
        return errors.isEmpty() ? fallback : String.join("; ", errors);
    }

    private static ProcessMemory.Reading reading(JsonNode node) {
        return new ProcessMemory.Reading(node.path("fileMappedResident").asLong(), node.path("fileMappedSize").asLong(),
                node.path("anonymousResident").asLong());
    }

    private static String javaCommand() {
        return ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    }

    private static String drain(InputStream in) {
        try (in; ByteArrayOutputStream bytes = new ByteArrayOutputStream()) {
            in.transferTo(bytes);
            return bytes.toString(StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String tail(String text, int lines) {
        List<String> all = text.lines().filter(line -> !line.isBlank()).toList();
        return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    }
}
