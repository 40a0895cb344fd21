package dev.placementaudit.store.cli;

import dev.placementaudit.store.AuditStore;
import dev.placementaudit.store.cli.AuditStoreCli.Common;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.ingest.IngestLoop;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import dev.placementaudit.service.UntilKafkaAnswers;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Callable;

@Command(name = "run", mixinStandardHelpOptions = true, description = "Ingest decisions into the database and serve the API. Started while no Kafka broker answers, it "
        + "stays up (/health DOWN) and starts when one does. Stops on SIGTERM.")
final class RunCommand implements Callable<Integer> {
    @Mixin Common common = new Common();

    @Override
    public Integer call() throws InterruptedException {
        StoreConfig config = common.storeConfig();
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        Optional<AuditStore> started = UntilKafkaAnswers.start("audit-store", config.kafka(), config.connectTimeout(), config.http(), registry,
                () -> AuditStore.start(config, registry), LoggerFactory.getLogger(RunCommand.class));
        if (started.isEmpty()) {
            return 0;
        }
        AuditStore store = started.get();
        Runtime.getRuntime().addShutdownHook(new Thread(store::close, "audit-store-shutdown"));
        while (!store.awaitTermination(Duration.ofSeconds(1))) {
            // waiting for SIGTERM or a fatal error
        }
        return store.state() == IngestLoop.State.FAILED ? 1 : 0;
    }
}
