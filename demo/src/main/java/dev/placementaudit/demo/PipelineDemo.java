package dev.placementaudit.demo;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.publish.PlacementEvents;
import dev.placementaudit.producer.simulate.Drift;
import dev.placementaudit.producer.simulate.FleetSimulator;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.service.Settings;
import dev.placementaudit.store.AuditStore;
import dev.placementaudit.store.StoreConfig;
import dev.placementaudit.store.query.AuditQueries;
import dev.placementaudit.store.regression.Finding;
import dev.placementaudit.testkit.EmbeddedKafkaBroker;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.pipeline.ResolverWorker;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

/**
 * The whole pipeline on one machine with nothing installed: a KRaft broker in this JVM, the resolver-worker, the
 * audit-store on an H2 file, and a simulated fleet of two releases in which r2 drops the FFN-down kernels - so those
 * weights are dequantized at load, lose their mapping, and land off-heap. Prints where every tensor landed, the
 * regressions and the alerts, then stops; {@code --serve} keeps the store's API and dashboard up afterwards.
 */
public final class PipelineDemo {
    private static final List<String> RELEASES = List.of("r1", "r2");

    public static void main(String[] args) throws Exception {
        AvroTrust.install();
        boolean serve = List.of(args).contains("--serve");
        Path dir = Path.of("target", "demo");
        deleteRecursively(dir);
        Files.createDirectories(dir);
        long started = System.nanoTime();
        say("starting a single-node KRaft Kafka broker in this JVM");
        try (EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.startEphemeral()) {
            String jdbc = "jdbc:h2:file:" + dir.resolve("audit").toAbsolutePath() + ";MODE=PostgreSQL;DATABASE_TO_LOWER=TRUE;DEFAULT_NULL_ORDERING=HIGH;AUTO_SERVER=TRUE";
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            Map<String, String> worker = new HashMap<>(Map.of("kafka.bootstrap.servers", broker.bootstrapServers(), "worker.instance.id", "demo",
                    "worker.http.port", "-1", "worker.poll.timeout", "200ms"));
            Map<String, String> store = new HashMap<>(Map.of("kafka.bootstrap.servers", broker.bootstrapServers(), "store.jdbc.url", jdbc,
                    "store.http.port", serve ? "8082" : "-1", "store.poll.timeout", "200ms"));
            try (ResolverWorker resolver = ResolverWorker.start(WorkerConfig.from(Settings.of(worker)), registry);
                 AuditStore audit = AuditStore.start(StoreConfig.from(Settings.of(store)), registry)) {
                FleetSimulator fleet = new FleetSimulator(7, 6, RELEASES, List.of(ModelCatalog.LLAMA_3_2_1B_Q4_K_M, ModelCatalog.QWEN_2_5_0_5B_Q8_0),
                        List.of(Drift.parse("r2:dequantize=*ffn_down*", RELEASES)), Instant.parse("2026-11-01T00:00:00Z"));
                say("publishing a simulated fleet: 6 deployments x 2 releases x 2 models = " + fleet.loadCount() + " loads, "
                        + fleet.tensorCount() + " tensors; r2 dequantizes every ffn_down weight at load");
                try (PlacementEvents events = PlacementEvents.connect(Map.of("bootstrap.servers", broker.bootstrapServers()), "model-loads",
                        Duration.ofSeconds(15))) {
                    List<CompletableFuture<?>> sent = new java.util.ArrayList<>();
                    for (ModelLoaded load : fleet) {
                        sent.add(events.publishAsync(load));
                    }
                    CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).join();
                }
                AuditQueries queries = audit.queries();
                long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
                long complete = 0;
                while (complete < fleet.loadCount() && System.nanoTime() < deadline) {
                    Thread.sleep(250);
                    complete = queries.loads(null, null, null, 1000).stream().filter(AuditQueries.LoadSummary::complete).count();
                    System.out.printf(Locale.ROOT, "\r  resolved and stored %d/%d loads", complete, fleet.loadCount());
                }
                System.out.println();
                waitForAlerts(queries);
                report(queries);
                System.out.printf(Locale.ROOT, "%ndone in %.1f s.%n", (System.nanoTime() - started) / 1e9);
                whereNext(jdbc, serve);
                if (serve) {
                    say("serving the API and dashboard on http://localhost:8082/ (Ctrl-C to stop)");
                    Thread.currentThread().join();
                }
            }
        }
    }

    private static void waitForAlerts(AuditQueries queries) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (queries.alerts(null, 1000).stream().anyMatch(a -> a.publishedAt() == null && a.suppressedBy() == null)
                && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
    }

    private static void report(AuditQueries queries) throws Exception {
        System.out.println();
        System.out.println("WHERE EVERY TENSOR LANDED (latest load per deployment, model and release)");
        System.out.printf(Locale.ROOT, "  %-12s %-22s %-4s %8s %10s %10s %10s%n", "deployment", "model", "rel", "tensors", "heap", "off-heap", "mapped");
        queries.loads(null, null, null, 1000).stream()
                .sorted(Comparator.comparing(AuditQueries.LoadSummary::deploymentId).thenComparing(AuditQueries.LoadSummary::modelId)
                        .thenComparing(AuditQueries.LoadSummary::release))
                .forEach(l -> System.out.printf(Locale.ROOT, "  %-12s %-22s %-4s %8d %10s %10s %10s%n", l.deploymentId(), l.modelId(), l.release(),
                        l.tensorCount(), ByteSizes.format(l.heapBytes()), ByteSizes.format(l.offHeapBytes()), ByteSizes.format(l.mappedBytes())));

        System.out.println();
        AuditQueries.FleetReport r2 = queries.fleet("r2");
        AuditQueries.FleetReport r1 = queries.fleet("r1");
        System.out.printf(Locale.ROOT, "FLEET  r1: off-heap %s, mapped %s   ->   r2: off-heap %s, mapped %s%n", ByteSizes.format(r1.offHeapBytes()),
                ByteSizes.format(r1.mappedBytes()), ByteSizes.format(r2.offHeapBytes()), ByteSizes.format(r2.mappedBytes()));
        System.out.println("  deployments with regressions in r2: " + r2.withRegressions());

        String example = r2.withRegressions().isEmpty() ? null : r2.withRegressions().get(0);
        if (example != null) {
            AuditQueries.DiffReport diff = queries.diff(example, ModelCatalog.LLAMA_3_2_1B_Q4_K_M.id(), "r1", "r2").orElseThrow();
            System.out.println();
            System.out.println("REGRESSION " + example + " " + ModelCatalog.LLAMA_3_2_1B_Q4_K_M.id() + " r1 -> r2: " + diff.countsByKind());
            diff.findings().stream().filter(f -> f.tensorName() != null).limit(3).forEach(PipelineDemo::printFinding);
            diff.findings().stream().filter(f -> f.tensorName() == null).forEach(f -> System.out.printf(Locale.ROOT, "  %s: %s -> %s (%s)%n",
                    f.kind(), ByteSizes.format(f.beforeBytes()), ByteSizes.format(f.afterBytes()), f.afterReason()));
        }
        System.out.println();
        System.out.println("ALERTS (published to placement-alerts)");
        queries.alerts(null, 10).forEach(a -> System.out.printf(Locale.ROOT, "  %-15s %-12s %s -> %s  %s -> %s  %s%n", a.kind(), a.deploymentId(),
                a.fromRelease(), a.toRelease(), ByteSizes.format(a.beforeBytes()), ByteSizes.format(a.afterBytes()), a.rule()));
    }

    private static void printFinding(Finding f) {
        System.out.printf(Locale.ROOT, "  %-14s %-26s %s (%s) -> %s (%s)%n      was: %s%n      now: %s%n", f.kind(), f.tensorName(), f.beforeDomain(),
                ByteSizes.format(f.beforeBytes()), f.afterDomain(), ByteSizes.format(f.afterBytes()), f.beforeReason(), f.afterReason());
    }

    private static void whereNext(String jdbc, boolean serve) {
        System.out.println();
        System.out.println("where to look next:");
        System.out.println("  the store is in target/demo (H2). Query it with the CLI, e.g.:");
        System.out.println("    java -cp \"$(cat demo/target/classpath.txt):demo/target/classes\" dev.placementaudit.store.cli.AuditStoreCli diff \\");
        System.out.println("      --set store.jdbc.url='" + jdbc.replace("jdbc:h2:file:" + Path.of("").toAbsolutePath() + "/", "jdbc:h2:file:./") + "' \\");
        System.out.println("      --deployment android-000 --model llama-3.2-1b-q4km --from r1 --to r2");
        if (!serve) {
            System.out.println("  ./demo.sh --serve keeps the API and the dashboard up at http://localhost:8082/");
        }
        System.out.println("  README.md: running against a real Kafka cluster and PostgreSQL, configuration, operations.");
    }

    private static void say(String line) {
        System.out.println("== " + line);
    }

    private static void deleteRecursively(Path dir) throws java.io.IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
