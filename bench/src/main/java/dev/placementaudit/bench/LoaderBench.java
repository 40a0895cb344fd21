package dev.placementaudit.bench;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.core.placement.PlannerProfile;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.load.LoadedModel;
import dev.placementaudit.producer.load.ReferenceLoader;
import dev.placementaudit.producer.model.DeploymentTarget;
import dev.placementaudit.producer.model.FormPolicy;
import dev.placementaudit.producer.model.ModelFiles;
import dev.placementaudit.producer.model.ModelLoadedBuilder;
import dev.placementaudit.producer.model.Platforms;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.sample.SampleModelFile;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.schemas.AvroTrust;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;

/**
 * What the reference loader's measuring costs: the same load of a ~1 GB sparse model (bitnet-2b-tq2_0's layout), with
 * and without measuring, alternated in one run, median of the rounds. The load itself (files mapped, buffers allocated
 * and filled) is the same both ways; measuring adds two readings (a collection requested and the buffer pools settled,
 * the file's smaps entry read). Two plans: desktop on a JVM (every large weight copied off-heap: the load does work),
 * and a phone's (every weight mapped: the load is nearly free, so the readings weigh most).
 */
public final class LoaderBench {
    public static void main(String[] args) throws Exception {
        AvroTrust.install();
        BenchOptions options = new BenchOptions(args);
        int rounds = options.integer("rounds", 7);
        String layout = options.text("model", "bitnet-2b-tq2_0");
        Path dir = Files.createTempDirectory("pa-bench-loader");
        Path file = dir.resolve(layout + ".gguf");
        SampleModelFile.write(ModelCatalog.byId(layout), SampleModelFile.Format.GGUF, file);
        StoredModel stored = ModelFiles.read(file);
        StringBuilder md = new StringBuilder("# reference loader: what measuring costs, " + LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME)
                + "\n\n`bench/run.sh loader --rounds " + rounds + " --model " + layout + "`: the same load of " + stored.name() + " ("
                + ByteSizes.format(Files.size(file)) + " sparse file, " + stored.tensors().size() + " tensors) with and without measuring, alternated, "
                + "after one warm-up of each; median of " + rounds + " rounds; " + Runtime.getRuntime().availableProcessors() + " cores, "
                + System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version") + ", max direct memory "
                + ByteSizes.format(ReferenceLoader.directMemoryCap()) + ".\n\n"
                + "| plan | planned off-heap / mapped | load without measuring (ms) | with measuring (ms) | measuring costs (medians) | "
                + "median of the rounds' differences |\n|---|---|---|---|---|---|\n");
        StringBuilder roundLines = new StringBuilder();
        for (String[] plan : List.of(new String[]{"desktop", "jvm"}, new String[]{"mobile-2gb", "android"})) {
            ModelLoaded load = ModelLoadedBuilder.build(UUID.randomUUID(), Instant.now(), layout, stored,
                    new DeploymentTarget("bench", "bench", "bench", "r1", plan[1], Platforms.byName(plan[1])),
                    new FormPolicy(PlannerProfile.byName(plan[0]), Platforms.kernels("all")), Map.of(), "bench");
            ReferenceLoader loader = new ReferenceLoader();
            List<Double> plain = new ArrayList<>();
            List<Double> measured = new ArrayList<>();
            String planned = "";
            for (int round = -1; round < rounds; round++) {
                for (boolean measure : new boolean[]{false, true}) {
                    release();
                    long started = System.nanoTime();
                    try (LoadedModel loaded = loader.load(file, load, measure)) {
                        double ms = (System.nanoTime() - started) / 1e6;
                        planned = ByteSizes.format(loaded.planned().offHeap()) + " / " + ByteSizes.format(loaded.planned().mapped());
                        if (round >= 0) {
                            (measure ? measured : plain).add(ms);
                        }
                    }
                }
                if (round >= 0) {
                    String line = String.format(Locale.ROOT, "%s on %s round %d: %.1f ms plain, %.1f ms measured", plan[0], plan[1], round + 1,
                            plain.get(round), measured.get(round));
                    System.out.println(line);
                    roundLines.append("    ").append(line).append('\n');
                }
            }
            double p = StoreBench.median(plain);
            double m = StoreBench.median(measured);
            List<Double> differences = new ArrayList<>();
            for (int i = 0; i < plain.size(); i++) {
                differences.add(measured.get(i) - plain.get(i));
            }
            double d = StoreBench.median(differences);
            md.append(String.format(Locale.ROOT, "| %s on %s | %s | %.1f | %.1f | **%+.1f%%** (%+.1f ms) | %+.1f ms (%+.1f%%) |%n", plan[0], plan[1],
                    planned, p, m, (m - p) * 100 / p, m - p, d, d * 100 / p));
        }
        md.append("\nEach load starts once the last one's buffers are freed (not timed). The rounds:\n\n").append(roundLines);
        Files.deleteIfExists(file);
        Files.deleteIfExists(dir);
        System.out.println(md);
        Path out = Path.of("bench", "results", "loader-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + ".md");
        Files.writeString(out, md.toString());
        System.out.println("written to " + out);
    }

    /** Lets the last load's buffers go and waits until the JVM has freed them: each load starts from the same place. */
    private static void release() throws InterruptedException {
        for (int i = 0; i < 100; i++) {
            System.gc();
            Thread.sleep(20);
            long held = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                    .mapToLong(BufferPoolMXBean::getMemoryUsed).sum();
            if (held < (16L << 20)) {
                return;
            }
        }
    }
}
