package dev.placementaudit.worker;

import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.service.Settings;
import dev.placementaudit.worker.pipeline.ResolverLoop;
import dev.placementaudit.worker.pipeline.ResolverWorker;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import dev.placementaudit.service.cli.CliErrors;
import dev.placementaudit.service.cli.ConfDir;
import dev.placementaudit.service.cli.ProjectVersion;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code placement-audit worker run [--config worker.properties] [--set key=value]...} */
@Command(name = "worker", mixinStandardHelpOptions = true, versionProvider = ProjectVersion.class,
        description = "Resolves where every tensor of every model load lands, exactly once.",
        subcommands = {ResolverWorkerMain.Run.class})
public final class ResolverWorkerMain {

    public static void main(String[] args) {
        AvroTrust.install();
        System.exit(commandLine().execute(args));
    }

    public static CommandLine commandLine() {
        return CliErrors.install(new CommandLine(new ResolverWorkerMain()));
    }

    @Command(name = "run", mixinStandardHelpOptions = true,
            description = "Consume model loads and emit one AllocationDecided per tensor and one LoadResolved per load. "
                    + "Stops gracefully on SIGTERM.")
    static final class Run implements Callable<Integer> {
        @Option(names = "--config", paramLabel = "FILE", description = "properties file (worker.*, kafka.*, connect.timeout); env PA_* and -D override it "
                + "(default: conf/worker.properties of the distribution, or of $PA_CONF_DIR, which documents every key)")
        Path config;

        @Option(names = "--set", paramLabel = "KEY=VALUE", description = "a setting that wins over every other layer, e.g. --set worker.http.port=0 (repeatable)",
                mapFallbackValue = "")
        Map<String, String> overrides = new LinkedHashMap<>();

        @Override
        public Integer call() throws InterruptedException {
            WorkerConfig workerConfig = WorkerConfig.from(Settings.load(ConfDir.orDefault(config, "worker.properties"), overrides));
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            ResolverWorker worker = ResolverWorker.start(workerConfig, registry);
            Thread hook = new Thread(worker::close, "resolver-shutdown");
            Runtime.getRuntime().addShutdownHook(hook);
            while (!worker.awaitTermination(Duration.ofSeconds(1))) {
                // waiting for SIGTERM or a fatal error
            }
            return worker.state() == ResolverLoop.State.FAILED ? 1 : 0;
        }
    }
}
