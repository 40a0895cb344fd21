package dev.placementaudit.collector;

import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.service.cli.CliErrors;
import dev.placementaudit.service.cli.ProjectVersion;
import dev.placementaudit.service.cli.ServiceSettingsOptions;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import dev.placementaudit.service.UntilKafkaAnswers;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/** {@code placement-audit collector run|token}. */
@Command(name = "collector", mixinStandardHelpOptions = true, versionProvider = ProjectVersion.class,
        description = "Takes model loads and observations over HTTPS from devices that cannot hold Kafka credentials, per-fleet tokens.",
        subcommands = {CollectorMain.Run.class, CollectorMain.Token.class})
public final class CollectorMain {
    public static void main(String[] args) {
        AvroTrust.install();
        System.exit(commandLine().execute(args));
    }

    /** {@code collector run|token} with the project's one-line errors: what the launcher mounts as {@code placement-audit collector}. */
    public static CommandLine commandLine() {
        return CliErrors.install(new CommandLine(new CollectorMain()));
    }

    @Command(name = "run", mixinStandardHelpOptions = true,
            description = "Serve POST /v1/loads (and /health, /metrics, /openapi.json), publishing to Kafka. Started while no Kafka broker "
                    + "answers, it stays up (/health DOWN) and starts when one does. Stops gracefully on SIGTERM.")
    static final class Run implements Callable<Integer> {
        @Mixin ServiceSettingsOptions settings = new ServiceSettingsOptions();

        @Override
        public Integer call() throws InterruptedException {
            CollectorConfig collectorConfig = CollectorConfig.from(settings.load("collector.properties"));
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            Optional<Collector> started = UntilKafkaAnswers.start("collector", collectorConfig.kafka(), collectorConfig.connectTimeout(),
                    collectorConfig.http(), registry, () -> Collector.start(collectorConfig, registry), LoggerFactory.getLogger(CollectorMain.class));
            if (started.isEmpty()) {
                return 0;
            }
            Collector collector = started.get();
            CountDownLatch stopped = new CountDownLatch(1);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                collector.close();
                stopped.countDown();
            }, "collector-shutdown"));
            stopped.await();
            return 0;
        }
    }

    @Command(name = "token", mixinStandardHelpOptions = true,
            description = "Make a new token for a fleet: prints the token (give it to the fleet's devices, keep it nowhere else) and the "
                    + "settings that let it write, which hold only its SHA-256.")
    static final class Token implements Callable<Integer> {
        @CommandLine.Spec CommandLine.Model.CommandSpec spec;

        @Option(names = "--fleet", required = true, paramLabel = "NAME", description = "the fleet's name, e.g. phones") String fleet;

        @Option(names = "--deployments", paramLabel = "IDS", defaultValue = "*",
                description = "deployment ids or prefixes ending in * the fleet may write (default: ${DEFAULT-VALUE}, every one)") String deployments;

        @Override
        public Integer call() {
            if (!fleet.matches("[a-z0-9][a-z0-9-]{0,62}")) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--fleet: a fleet name is lower-case letters, digits and '-', was '"
                        + fleet + "'");
            }
            String token = Tokens.newToken();
            PrintWriter out = spec.commandLine().getOut();
            out.println("token (shown once; the collector keeps only its digest): " + token);
            out.println();
            out.println("# add to conf/collector.properties, and " + fleet + " to collector.fleets");
            out.println("collector.fleet." + fleet + ".token.sha256=" + Tokens.sha256Hex(token));
            out.println("collector.fleet." + fleet + ".deployments=" + deployments);
            out.flush();
            return 0;
        }
    }
}
