package dev.placementaudit.worker;

import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.worker.pipeline.ResolverLoop;
import dev.placementaudit.worker.pipeline.ResolverWorker;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import dev.placementaudit.service.UntilKafkaAnswers;
import dev.placementaudit.service.cli.CliErrors;
import dev.placementaudit.service.cli.ProjectVersion;
import dev.placementaudit.service.cli.ServiceSettingsOptions;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Callable;

/** {@code placement-audit worker run [--config worker.properties] [--set key=value]...} */
@Command(name = "worker", mixinStandardHelpOptions = true, versionProvider = ProjectVersion.class,
        description = "Resolves where every tensor of every model load lands, exactly once.",
        subcommands = {ResolverWorkerMain.Run.class})
public final class ResolverWorkerMain {
    private static final Logger LOG = LoggerFactory.getLogger(ResolverWorkerMain.class);

    /** {@code worker run} with one-line errors (the launcher mounts it as {@code placement-audit worker}). */
    public static CommandLine commandLine() {
        return CliErrors.install(new CommandLine(new ResolverWorkerMain()));
    }

    public static void main(String[] args) {
        AvroTrust.install();
        System.exit(commandLine().execute(args));
    }

    @Command(name = "run", mixinStandardHelpOptions = true,
            description = "Consume model loads and emit one AllocationDecided per tensor and one LoadResolved per load. "
                    + "Started while no Kafka broker answers, it stays up (/health DOWN) and starts when one does. Stops gracefully on SIGTERM.")
    static final class Run implements Callable<Integer> {
        @Mixin ServiceSettingsOptions settings = new ServiceSettingsOptions();

        @Override
        public Integer call() throws InterruptedException {
            WorkerConfig workerConfig = WorkerConfig.from(settings.load("worker.properties"));
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            Optional<ResolverWorker> started = UntilKafkaAnswers.start("resolver-worker", workerConfig.kafka(), workerConfig.connectTimeout(),
                    workerConfig.http(), registry, () -> ResolverWorker.start(workerConfig, registry), LOG);
            if (started.isEmpty()) {
                return 0;
            }
            ResolverWorker worker = started.get();
            Thread hook = new Thread(worker::close, "resolver-shutdown");
            Runtime.getRuntime().addShutdownHook(hook);
            while (!worker.awaitTermination(Duration.ofSeconds(1))) {
                // waiting for SIGTERM or a fatal error
            }
            return worker.state() == ResolverLoop.State.FAILED ? 1 : 0;
        }
    }
}
