package dev.placementaudit.demo;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.publish.PlacementEvents;
import dev.placementaudit.producer.simulate.Drift;
import dev.placementaudit.producer.simulate.FleetSimulator;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.service.Settings;
import dev.placementaudit.service.cli.CliErrors;
import dev.placementaudit.service.cli.CommandFailure;
import dev.placementaudit.service.cli.ProjectVersion;
import dev.placementaudit.store.AuditStore;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.db.Sql;
import dev.placementaudit.store.incidents.Incidents;
import dev.placementaudit.store.query.AuditQueries;
import dev.placementaudit.store.query.DiffQueries;
import dev.placementaudit.store.query.FleetQueries;
import dev.placementaudit.store.query.LoadQueries;
import dev.placementaudit.store.regression.RootCauses;
import dev.placementaudit.testkit.EmbeddedKafkaBroker;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.pipeline.ResolverWorker;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import javax.sql.DataSource;

/**
 * The whole pipeline on one machine with nothing installed: a KRaft broker in this JVM, the resolver-worker, the
 * audit-store on an H2 file, and a simulated fleet of two releases in which r2 drops the FFN-down kernels - so those
 * weights are dequantized at load, lose their mapping, and land off-heap. Prints where every tensor landed, the
 * regressions and the alerts, then stops; {@code --serve} keeps the broker, the store and its API up afterwards, and
 * writes the addresses to {@code <dir>/demo.env} so that every CLI command can be tried against them.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, versionProvider = ProjectVersion.class,
        description = "Run the whole pipeline in this JVM (Kafka broker, resolver-worker, audit-store on H2) on a simulated fleet "
                + "whose second release regresses, and print what the audit finds.")
public final class PipelineDemo implements Callable<Integer> {
    private static final List<String> RELEASES = List.of("r1", "r2");
    /** The file {@code --serve} writes: source it to point the CLI at the running demo. */
    public static final String ENV_FILE = "demo.env";

    @Option(names = "--serve", description = "keep the broker, the store and its API and dashboard up after the report, until Ctrl-C") boolean serve;

    @Option(names = "--kafka-port", defaultValue = "9092", description = "with --serve, the broker's port; 0 for any free one (default: ${DEFAULT-VALUE})")
    int kafkaPort;

    @Option(names = "--http-port", defaultValue = "8082", description = "with --serve, the API and dashboard's port; 0 for any free one (default: ${DEFAULT-VALUE})")
    int httpPort;

    @Option(names = "--dir", defaultValue = "data/demo", description = "where the demo keeps its broker log and H2 store; emptied first (default: ${DEFAULT-VALUE})")
    Path dir;

    @Option(names = "--without-llama-cpp", description = "leave out the llama.cpp boxes (whose loads real llama.cpp makes): what they cost the "
            + "demo's time is measured against this (bench/run.sh demo)") boolean withoutLlamaCpp;

    @Option(names = CliErrors.VERBOSE, description = "print the stack trace of a failure") boolean verbose;

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        AvroTrust.install();
        System.exit(CliErrors.install(new CommandLine(new PipelineDemo())).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        AvroTrust.install();
        PrintWriter out = spec.commandLine().getOut();
        deleteRecursively(dir);
        Files.createDirectories(dir);
        long started = System.nanoTime();
        // Real llama.cpp loads (child JVMs) start now and run while the broker starts and the fleet is published.
        LlamaCppFleet llama = withoutLlamaCpp ? null : new LlamaCppFleet(dir.resolve("llama.cpp"));
        say(out, "starting a single-node KRaft Kafka broker in this JVM");
        try (EmbeddedKafkaBroker broker = serve ? startServing(dir.resolve("kafka")) : EmbeddedKafkaBroker.startEphemeral()) {
            String jdbc = StoreConfig.h2Url(dir.resolve("audit").toAbsolutePath().normalize().toString());
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            Map<String, String> worker = new HashMap<>(Map.of("kafka.bootstrap.servers", broker.bootstrapServers(), "worker.instance.id", "demo",
                    "worker.http.port", "-1", "worker.poll.timeout", "200ms"));
            Map<String, String> store = new HashMap<>(Map.of("kafka.bootstrap.servers", broker.bootstrapServers(), "store.jdbc.url", jdbc,
                    "store.http.port", serve ? Integer.toString(httpPort) : "-1", "store.poll.timeout", "200ms"));
            try (ResolverWorker resolver = ResolverWorker.start(WorkerConfig.from(Settings.of(worker)), registry);
                 AuditStore audit = AuditStore.start(StoreConfig.from(Settings.of(store)), registry)) {
                FleetSimulator fleet = new FleetSimulator(7, 6, RELEASES, List.of(ModelCatalog.LLAMA_3_2_1B_Q4_K_M, ModelCatalog.QWEN_2_5_0_5B_Q8_0),
                        List.of(Drift.parse("r2:dequantize=*ffn_down*", RELEASES)), Instant.parse("2026-11-01T00:00:00Z"));
                say(out, "publishing a simulated fleet: 6 deployments x 2 releases x 2 models = " + fleet.loadCount() + " loads, "
                        + fleet.tensorCount() + " tensors; r2 dequantizes every ffn_down weight at load");
                long expected = fleet.loadCount();
                try (PlacementEvents events = PlacementEvents.connect(Map.of("bootstrap.servers", broker.bootstrapServers()), "model-loads",
                        "load-observations", Duration.ofSeconds(15))) {
                    List<CompletableFuture<?>> sent = new ArrayList<>();
                    for (ModelLoaded load : fleet) {
                        sent.add(events.publishAsync(load));
                    }
                    CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).join();
                    if (llama != null) {
                        say(out, "publishing 3 llama.cpp boxes x 2 releases, each load made by real llama.cpp: r1 ships a tiny llama in Q8_0, r2 "
                                + "its Q4_0 requantisation; llama-box-3 runs with mmap off");
                        expected += llama.publish(events, out);
                    }
                }
                AuditQueries queries = audit.queries();
                long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
                long complete = 0;
                while (complete < expected && System.nanoTime() < deadline) {
                    Thread.sleep(250);
                    complete = queries.loads(null, null, null, 1000).stream().filter(LoadQueries.LoadSummary::complete).count();
                    out.printf(Locale.ROOT, "\r  resolved and stored %d/%d loads", complete, expected);
                    out.flush();
                }
                out.println();
                waitForIncidents(audit.database().dataSource());
                report(out, queries, audit.database().dataSource());
                out.printf(Locale.ROOT, "%ndone in %.1f s.%n", (System.nanoTime() - started) / 1e9);
                if (serve) {
                    serveUntilStopped(out, broker.bootstrapServers(), jdbc, audit.port());
                } else {
                    out.println("./demo.sh --serve keeps the broker, the store and the dashboard up, so that every command of the README's tour "
                            + "can be tried against them.");
                }
            }
        }
        return 0;
    }

    /** The broker on the asked port, so that the addresses the tour uses stay the same from run to run. */
    private EmbeddedKafkaBroker startServing(Path kafkaDir) {
        int port = kafkaPort == 0 ? EmbeddedKafkaBroker.freePort() : kafkaPort;
        if (!portIsFree(port)) {
            throw new CommandFailure("port " + port + " is in use (another Kafka, or a demo still running?): pass --kafka-port N, or 0 for any free port");
        }
        if (httpPort != 0 && !portIsFree(httpPort)) {
            throw new CommandFailure("port " + httpPort + " is in use (a demo still running?): pass --http-port N, or 0 for any free port");
        }
        return EmbeddedKafkaBroker.startPersistent(kafkaDir, port, EmbeddedKafkaBroker.freePort());
    }

    private void serveUntilStopped(PrintWriter out, String bootstrapServers, String jdbc, int apiPort) throws Exception {
        Path env = dir.resolve(ENV_FILE);
        StringBuilder lines = new StringBuilder("# Written by `placement-audit demo --serve`: source it to point the CLI at the running demo.\n");
        String home = System.getProperty("app.home");
        if (home != null) {
            lines.append("export PATH=\"").append(Path.of(home, "bin").toAbsolutePath().normalize()).append(":$PATH\"\n");
        }
        lines.append("export KAFKA_BOOTSTRAP_SERVERS=").append(bootstrapServers).append('\n')
                .append("export PA_STORE_JDBC_URL='").append(jdbc).append("'\n")
                .append("export PA_DEMO_API=http://localhost:").append(apiPort).append('\n');
        Files.writeString(env, lines);
        out.println();
        say(out, "serving until Ctrl-C");
        out.printf(Locale.ROOT, "  Kafka bootstrap servers  %s%n", bootstrapServers);
        out.printf(Locale.ROOT, "  audit store              %s%n", jdbc);
        out.printf(Locale.ROOT, "  API and dashboard        http://localhost:%d/%n", apiPort);
        out.printf(Locale.ROOT, "  in another terminal, point the CLI at this demo:  . %s%n", env);
        out.flush();
        Thread.currentThread().join();
    }

    /** Until placement-alerts carries every incident as it stands (or 10 s). */
    private static void waitForIncidents(DataSource database) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < deadline) {
            try (Connection c = database.getConnection()) {
                if (Sql.number(c, "SELECT COUNT(*) FROM incidents WHERE published_version IS NULL OR published_version < version") == 0) {
                    return;
                }
            }
            Thread.sleep(100);
        }
    }

    private static void report(PrintWriter out, AuditQueries queries, DataSource database) throws Exception {
        out.println();
        out.println("WHERE EVERY TENSOR LANDED (latest load per deployment, model and release)");
        out.printf(Locale.ROOT, "  %-12s %-22s %-4s %8s %10s %10s %10s%n", "deployment", "model", "rel", "tensors", "heap", "off-heap", "mapped");
        queries.loads(null, null, null, 1000).stream()
                .sorted(Comparator.comparing(LoadQueries.LoadSummary::deploymentId).thenComparing(LoadQueries.LoadSummary::modelId)
                        .thenComparing(LoadQueries.LoadSummary::release))
                .forEach(l -> out.printf(Locale.ROOT, "  %-12s %-22s %-4s %8d %10s %10s %10s%n", l.deploymentId(), l.modelId(), l.release(),
                        l.tensorCount(), ByteSizes.format(l.heapBytes()), ByteSizes.format(l.offHeapBytes()), ByteSizes.format(l.mappedBytes())));

        out.println();
        FleetQueries.FleetReport r2 = queries.fleet("r2");
        FleetQueries.FleetReport r1 = queries.fleet("r1");
        out.printf(Locale.ROOT, "FLEET  r1: off-heap %s, mapped %s   ->   r2: off-heap %s, mapped %s%n", ByteSizes.format(r1.offHeapBytes()),
                ByteSizes.format(r1.mappedBytes()), ByteSizes.format(r2.offHeapBytes()), ByteSizes.format(r2.mappedBytes()));
        out.println("  deployments with regressions in r2: " + r2.withRegressions());

        LlamaCppFleet.report(out, queries);

        String example = r2.withRegressions().stream().filter(d -> !LlamaCppFleet.DEPLOYMENTS.contains(d)).findFirst().orElse(null);
        if (example != null) {
            DiffQueries.DiffReport diff = queries.diff(example, ModelCatalog.LLAMA_3_2_1B_Q4_K_M.id(), "r1", "r2").orElseThrow();
            out.println();
            out.println("REGRESSION " + example + " " + ModelCatalog.LLAMA_3_2_1B_Q4_K_M.id() + " r1 -> r2: " + diff.causes().size()
                    + " root causes (findings " + diff.countsByKind() + ")");
            for (RootCauses.CauseGroup cause : diff.causes()) {
                out.println("  " + cause.cause());
                cause.tensors().stream().limit(3).forEach(t -> out.printf(Locale.ROOT, "      %-28s %s%n", t.name(), t.placement()));
                if (cause.tensorCount() > 3) {
                    out.printf(Locale.ROOT, "      ... and %d more%n", cause.tensorCount() - 3);
                }
            }
            diff.findings().stream().filter(f -> f.tensorName() == null).forEach(f -> out.printf(Locale.ROOT, "  %s: %s -> %s (%s)%n",
                    f.kind(), ByteSizes.format(f.beforeBytes()), ByteSizes.format(f.afterBytes()), f.afterReason()));
        }
        out.println();
        // One incident per cause across the fleet, in an order that does not depend on timing: by model, then id.
        List<Incidents.Incident> incidents;
        try (Connection c = database.getConnection()) {
            incidents = Incidents.list(c, false, null, null).stream().sorted(Comparator.comparing(Incidents.Incident::modelId)
                    .thenComparing(Incidents.Incident::incidentId)).toList();
        }
        out.printf(Locale.ROOT, "INCIDENTS (published to placement-alerts, one per cause): %d%n", incidents.size());
        for (Incidents.Incident i : incidents) {
            out.printf(Locale.ROOT, "  %s %-8s %-20s %s -> %s  %s  %s%n", i.incidentId(), i.state(), i.modelId(), i.fromRelease(), i.toRelease(),
                    i.primaryKind(), i.exposureText());
            out.println("      why: " + i.cause());
        }
        out.printf(Locale.ROOT, "  behind them: %d per-load alerts (placement-audit store alerts lists them); placement-audit store incident ID "
                + "shows one, store gate --release r2 holds the release back%n", queries.alertCount());
    }

    private static void say(PrintWriter out, String line) {
        out.println("== " + line);
        out.flush();
    }

    private static boolean portIsFree(int port) {
        try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }


    private static void deleteRecursively(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
