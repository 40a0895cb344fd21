package dev.placementaudit.bench;

import dev.placementaudit.core.format.GgmlType;
import dev.placementaudit.producer.llamacpp.LlamaCppRun;
import dev.placementaudit.producer.sample.TinyLlamaFile;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What auditing a real llama.cpp costs (issue 57's figures), in one run on this machine:
 * <ol>
 *   <li>the measuring against llama.cpp's own load: a 12-layer llama of about 110 MB in Q4_0 loaded by llama.cpp in a
 *   child JVM, bare (its logging off, nothing read) and measured (log captured at verbosity 10, smaps and RssAnon read
 *   before and after), alternated in paired rounds after a warm-up of each, the file's pages cached;</li>
 *   <li>{@code producer load --runtime llama.cpp} of the tiny model as a user types it, JVM start included: the command's
 *   wall time, median of the runs.</li>
 * </ol>
 */
public final class LlamaBench {
    private static final Duration TIMEOUT = Duration.ofMinutes(5);

    public static void main(String[] args) throws Exception {
        int rounds = new BenchOptions(args).integer("rounds", 7);
        Path dir = Files.createTempDirectory("pa-llama-bench");
        Path small = dir.resolve("small-q4_0.gguf");
        long size = TinyLlamaFile.write(TinyLlamaFile.SMALL, GgmlType.Q4_0, 1, small);
        Path tiny = dir.resolve("tiny-q4_0.gguf");
        TinyLlamaFile.write(GgmlType.Q4_0, 1, tiny);
        LlamaCppRun.bareLoadMillis(small, TIMEOUT);
        LlamaCppRun.load(small, true, 0, TIMEOUT);
        List<Double> bare = new ArrayList<>();
        List<Double> measured = new ArrayList<>();
        List<Double> ratios = new ArrayList<>();
        for (int i = 0; i < rounds; i++) {
            double b = LlamaCppRun.bareLoadMillis(small, TIMEOUT);
            LlamaCppRun.Result m = LlamaCppRun.load(small, true, 0, TIMEOUT);
            double withMeasuring = m.loadMillis() + m.measuringMillis();
            bare.add(b);
            measured.add(withMeasuring);
            ratios.add(withMeasuring / b);
            System.out.printf(Locale.ROOT, "round %d: bare %.1f ms, measured %.1f ms (of which reading /proc %.2f ms)%n", i + 1, b, withMeasuring,
                    m.measuringMillis());
        }
        // As a user types it: the distribution's launcher when it is built (mvn package), else the class path on a plain JVM.
        List<String> command = launcher().map(l -> new ArrayList<>(List.of(l.toString(), "producer"))).orElseGet(() -> new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElse("java"), "-cp", System.getProperty("java.class.path"),
                "dev.placementaudit.producer.cli.ProducerCli")));
        command.addAll(List.of("load", "--model", tiny.toString(), "--runtime", "llama.cpp"));
        List<Double> cli = new ArrayList<>();
        for (int i = 0; i < rounds + 1; i++) {
            long start = System.nanoTime();
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            if (p.waitFor() != 0 || !out.contains("as planned")) {
                throw new IllegalStateException("producer load --runtime llama.cpp failed:\n" + out);
            }
            if (i > 0) {
                cli.add((System.nanoTime() - start) / 1e6);
            }
        }
        StringBuilder md = new StringBuilder();
        md.append("# llama.cpp under audit, ").append(LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME)).append("\n\n")
                .append(Runtime.getRuntime().availableProcessors()).append(" cores; llama.cpp b4916 (de.kherud:llama 4.1.0) in a child JVM; ")
                .append(rounds).append(" paired rounds after a warm-up of each; the model's pages cached.\n\n")
                .append("| what | median | rounds |\n|---|---|---|\n");
        md.append(String.format(Locale.ROOT, "| llama.cpp's own load of a %d MB Q4_0 llama (12 layers, 1,024 wide), bare (its log off, nothing read) | %.1f ms | %s |%n",
                size >> 20, StoreBench.median(bare), list(bare)));
        md.append(String.format(Locale.ROOT, "| the same load, measured (log at verbosity 10, /proc read before and after) | %.1f ms | %s |%n",
                StoreBench.median(measured), list(measured)));
        md.append(String.format(Locale.ROOT, "| measured / bare, median of the rounds' ratios | %.3f (%+.1f%%) | %s |%n",
                StoreBench.median(ratios), (StoreBench.median(ratios) - 1) * 100, list(ratios)));
        md.append(String.format(Locale.ROOT, "| `%s` of the tiny model, JVM start included (wall) | %.0f ms | %s |%n",
                launcher().isPresent() ? "placement-audit producer load --runtime llama.cpp" : "java -cp ... ProducerCli load --runtime llama.cpp",
                StoreBench.median(cli), list(cli)));
        System.out.print(md);
        Path out = Path.of("bench", "results", "llama-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + ".md");
        Files.createDirectories(out.getParent());
        Files.writeString(out, md.toString());
        System.out.println("written to " + out);
    }

    private static java.util.Optional<Path> launcher() {
        try (var homes = Files.list(Path.of("dist", "target"))) {
            return homes.filter(p -> p.getFileName().toString().startsWith("placement-audit-") && Files.isDirectory(p))
                    .map(p -> p.resolve("bin").resolve("placement-audit")).filter(Files::isExecutable).findFirst();
        } catch (java.io.IOException e) {
            return java.util.Optional.empty();
        }
    }

    private static String list(List<Double> values) {
        return String.join(", ", values.stream().map(v -> String.format(Locale.ROOT, v < 10 ? "%.3f" : "%.0f", v)).toList());
    }
}
