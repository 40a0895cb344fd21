package dev.placementaudit.worker;

import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.service.Settings;
import dev.placementaudit.worker.pipeline.ResolverLoop;
import dev.placementaudit.worker.pipeline.ResolverWorker;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code resolver-worker run [--config worker.properties] [--set key=value]...} */
@Command(name = "resolver-worker", mixinStandardHelpOptions = true, versionProvider = ResolverWorkerMain.Version.class,
        description = "Resolves where every tensor of every model load lands, exactly once.",
        subcommands = {ResolverWorkerMain.Run.class})
public final class ResolverWorkerMain {

    public static void main(String[] args) {
        AvroTrust.install();
        System.exit(new CommandLine(new ResolverWorkerMain()).execute(args));
    }

    @Command(name = "run", mixinStandardHelpOptions = true,
            description = "Consume model loads and emit one AllocationDecided per tensor and one LoadResolved per load. "
                    + "Stops gracefully on SIGTERM.")
    static final class Run implements Callable<Integer> {
        @Option(names = "--config", description = "properties file (worker.*, kafka.*); env PA_* and -D override it")
        Path config;

        @Option(names = "--set", description = "key=value override, e.g. --set worker.http.port=0", mapFallbackValue = "")
        Map<String, String> overrides = new LinkedHashMap<>();

        @Override
        public Integer call() throws InterruptedException {
            WorkerConfig workerConfig = WorkerConfig.from(Settings.load(config, overrides));
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

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[]{"resolver-worker " + WorkerVersion.resolverVersion()};
        }
    }
}
