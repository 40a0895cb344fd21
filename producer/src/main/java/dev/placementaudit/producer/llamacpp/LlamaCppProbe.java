package dev.placementaudit.producer.llamacpp;

import com.fasterxml.jackson.databind.ObjectMapper;
import de.kherud.llama.InferenceParameters;
import de.kherud.llama.LlamaModel;
import de.kherud.llama.LogLevel;
import de.kherud.llama.ModelParameters;
import de.kherud.llama.args.LogFormat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The child process that loads a model through real llama.cpp (de.kherud:llama, in this JVM) and reports, as one JSON
 * line after {@link #RESULT}, llama.cpp's log, how long the load took, and this process's memory before and after it.
 * A child, so that a crash of the native code ends this process, not the caller's, and the memory measured is the
 * load's alone. Exit codes: 0 loaded, 2 llama.cpp refused the file, 3 no native library for this platform.
 */
public final class LlamaCppProbe {
    public static final String RESULT = "placement-audit-llama.cpp-result ";
    /** With {@code --hold}: printed once the model is loaded; the process then holds it until its input closes. */
    public static final String READY = "placement-audit-llama.cpp-ready";

    private LlamaCppProbe() {
    }

    public static void main(String[] args) throws Exception {
        Path model = Path.of(args[0]);
        boolean mmap = !List.of(args).contains("--no-mmap");
        int generate = 0;
        for (int i = 0; i < args.length - 1; i++) {
            if (args[i].equals("--generate")) {
                generate = Integer.parseInt(args[i + 1]);
            }
        }
        if (List.of(args).contains("--bare")) {
            bare(model);
            return;
        }
        if (List.of(args).contains("--hold")) {
            hold(model, !List.of(args).contains("--no-mmap"));
            return;
        }
        List<String> log = Collections.synchronizedList(new ArrayList<>());
        StringBuilder partial = new StringBuilder();
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("platform", System.getProperty("os.name") + " " + System.getProperty("de.kherud.llama.osinfo.architecture", System.getProperty("os.arch")));
        int exit = 0;
        try {
            LlamaModel.setLogger(LogFormat.TEXT, (LogLevel level, String text) -> {
                synchronized (partial) {
                    partial.append(text);
                    int newline;
                    while ((newline = partial.indexOf("\n")) >= 0) {
                        log.add(level + " " + partial.substring(0, newline));
                        partial.delete(0, newline + 1);
                    }
                }
            });
            long measuring = System.nanoTime();
            ProcessMemory.Reading before = ProcessMemory.read("self", model);
            measuring = System.nanoTime() - measuring;
            ModelParameters parameters = new ModelParameters().setModel(model.toString()).setLogVerbosity(10).setCtxSize(256)
                    .setThreads(Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors())));
            if (!mmap) {
                parameters.disableMmap();
            }
            long start = System.nanoTime();
            try (LlamaModel loaded = new LlamaModel(parameters)) {
                long loadNanos = System.nanoTime() - start;
                long reading = System.nanoTime();
                ProcessMemory.Reading after = ProcessMemory.read("self", model);
                measuring += System.nanoTime() - reading;
                result.put("loadMillis", loadNanos / 1e6);
                result.put("measuringMillis", measuring / 1e6);
                result.put("before", before);
                result.put("after", after);
                if (generate > 0) {
                    String text = loaded.complete(new InferenceParameters("The model").setNPredict(generate).setSeed(1).setTemperature(0f));
                    result.put("generatedTokens", loaded.encode(text).length);
                }
            }
        } catch (RuntimeException e) {
            // de.kherud.llama.LlamaException (not public): llama.cpp would not load the file; its reason is in the log.
            if (!e.getClass().getName().equals("de.kherud.llama.LlamaException")) {
                throw e;
            }
            exit = 2;
            result.put("error", e.getMessage());
        } catch (UnsatisfiedLinkError e) {
            exit = 3;
            result.put("error", e.getMessage());
        }
        synchronized (partial) {
            if (partial.length() > 0) {
                log.add("INFO " + partial);
            }
        }
        result.put("log", new ArrayList<>(log));
        System.out.println(RESULT + new ObjectMapper().writeValueAsString(result));
        System.out.flush();
        System.exit(exit);
    }

    /**
     * A llama.cpp process as a team runs one (llama-server, a service embedding it): the model loaded and held, its log on
     * standard output, until standard input closes. What {@code producer observe --pid} is tested against.
     */
    private static void hold(Path model, boolean mmap) throws Exception {
        LlamaModel.setLogger(LogFormat.TEXT, (LogLevel level, String text) -> System.out.print(text));
        ModelParameters parameters = new ModelParameters().setModel(model.toString()).setLogVerbosity(10).setCtxSize(256).setThreads(1);
        if (!mmap) {
            parameters.disableMmap();
        }
        try (LlamaModel loaded = new LlamaModel(parameters)) {
            System.out.println();
            System.out.println(READY + " pid=" + ProcessHandle.current().pid());
            System.out.flush();
            System.in.transferTo(java.io.OutputStream.nullOutputStream());
        }
        // llama.cpp's threads are not daemons: without an exit the JVM would outlive its input.
        System.exit(0);
    }

    /** llama.cpp's load with nothing else: its logging off, nothing measured. The floor the bench times the measuring against. */
    private static void bare(Path model) throws Exception {
        ModelParameters parameters = new ModelParameters().setModel(model.toString()).setCtxSize(256).disableLog()
                .setThreads(Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors())));
        long start = System.nanoTime();
        try (LlamaModel loaded = new LlamaModel(parameters)) {
            long loadNanos = System.nanoTime() - start;
            System.out.println(RESULT + new ObjectMapper().writeValueAsString(Map.of("loadMillis", loadNanos / 1e6)));
            System.out.flush();
        }
        System.exit(0);
    }
}
