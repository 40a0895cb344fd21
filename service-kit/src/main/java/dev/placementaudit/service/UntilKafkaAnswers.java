package dev.placementaudit.service;

import dev.placementaudit.service.cli.KafkaReachability;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.slf4j.Logger;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * How a long-running service starts while its Kafka cluster does not answer (a broker away, a cluster restarting with
 * it): it stays up, says DOWN on {@code /health} with the reason (the same address and port it will serve on once
 * started), asks again with back-off, and starts its work when a broker answers; a SIGTERM meanwhile ends the wait.
 * One-shot commands keep giving up after {@code connect.timeout}: a person is waiting for them.
 */
public final class UntilKafkaAnswers {
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(10);

    private UntilKafkaAnswers() {
    }

    /**
     * @param start starts the service, asking the cluster first within {@code connect.timeout}
     * @return the started service; empty when the process is stopping (SIGTERM) before a broker answered
     */
    public static <T> Optional<T> start(String service, Map<String, Object> kafka, Duration connectTimeout, HttpSettings http,
                                        PrometheusMeterRegistry registry, Supplier<T> start, Logger log) {
        CountDownLatch stopping = new CountDownLatch(1);
        Thread hook = new Thread(stopping::countDown, service + "-wait-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        OpsServer waiting = null;
        Instant since = Instant.now();
        AtomicInteger attempts = new AtomicInteger();
        AtomicReference<String> reason = new AtomicReference<>();
        try {
            while (true) {
                try {
                    if (reason.get() != null) {
                        // Asked with the waiting endpoint still up, so /health answers all along; closed just before the
                        // service binds the same port.
                        KafkaReachability.check(kafka, connectTimeout, List.of());
                        if (waiting != null) {
                            waiting.close();
                            waiting = null;
                        }
                        log.info("{}: Kafka answers after {} s; starting", service, Duration.between(since, Instant.now()).toSeconds());
                    }
                    return Optional.of(start.get());
                } catch (KafkaReachability.Unreachable e) {
                    if (reason.getAndSet(e.getMessage()) == null) {
                        log.warn("{}: {}; staying up and asking again until one does (/health says DOWN meanwhile)", service, e.getMessage());
                        waiting = http.port() < 0 ? null : OpsServer.start(http, registry, () -> Health.down(Map.of("waitingFor", "Kafka",
                                "reason", reason.get(), "since", since.toString(), "attempts", attempts.get())), routes -> { });
                    }
                    long backoff = Math.min(MAX_BACKOFF.toMillis(), 500L << Math.min(attempts.incrementAndGet(), 5));
                    if (stopping.await(backoff, TimeUnit.MILLISECONDS)) {
                        log.info("{}: stopped while waiting for Kafka", service);
                        return Optional.empty();
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        } finally {
            if (waiting != null) {
                waiting.close();
            }
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // The JVM is stopping: the hook has run or is running.
            }
        }
    }
}
