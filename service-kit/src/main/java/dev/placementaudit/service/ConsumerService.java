package dev.placementaudit.service;

import io.javalin.config.JavalinConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * A running consuming service, the shape both the resolver-worker and the audit-store share: its {@link ConsumerLoop}
 * on a thread of its own, an ops endpoint ({@code /health}, {@code /metrics}, and whatever routes the service adds),
 * and a graceful close: the loop finishes the step in hand, the endpoint stops answering, then the service closes
 * what it owns.
 */
public abstract class ConsumerService implements AutoCloseable {
    /** How long a close waits for the step in hand (a transaction, a batch) to finish. */
    private static final Duration GRACE = Duration.ofSeconds(30);

    private final String name;
    private final ConsumerLoop loop;
    private final Logger log;
    private volatile OpsServer ops;

    /** @param name what the logs call this instance, e.g. "resolver-worker w-1" */
    protected ConsumerService(String name, ConsumerLoop loop, Logger log) {
        this.name = name;
        this.loop = loop;
        this.log = log;
    }

    /** Starts the ops endpoint, unless its port is negative (off); it reports this service's {@link #health()}. */
    protected final void serve(HttpSettings http, PrometheusMeterRegistry registry, Consumer<JavalinConfig> routes) {
        ops = http.port() < 0 ? null : OpsServer.start(http, registry, this::health, routes);
    }

    /** Details that say which instance this is, shown in {@code /health} after the state. */
    protected Map<String, Object> identity() {
        return Map.of();
    }

    /** The service's own problems, beyond what its consumer's vitals say. */
    protected List<String> problems() {
        return List.of();
    }

    /** What an operator should know that leaves the service UP, shown under {@code warnings} on {@code /health}. */
    protected List<String> warnings() {
        return List.of();
    }

    /** After the loop has stopped and the ops endpoint is down: close what the service owns. */
    protected abstract void closeResources();

    /**
     * Up only while the loop runs and nothing has been wrong past the health bound: the broker out of reach, no
     * partition assigned, records waiting with nothing committed, or a problem of the service's own. Each is named.
     */
    public final Health health() {
        return loop.health(identity(), problems(), warnings());
    }

    public final ConsumerLoop.State state() {
        return loop.state();
    }

    public final Set<TopicPartition> assignment() {
        return loop.assignment();
    }

    /** The ops endpoint's port, or -1 when it is off. */
    public final int port() {
        OpsServer server = ops;
        return server == null ? -1 : server.port();
    }

    /** Blocks until the loop ends (shutdown or failure); true if it has. */
    public final boolean awaitTermination(Duration timeout) throws InterruptedException {
        return loop.awaitTermination(timeout);
    }

    /** Graceful: the step in hand finishes (a batch commits or aborts), the endpoint stops, then the rest closes. */
    @Override
    public final void close() {
        loop.stop(GRACE);
        OpsServer server = ops;
        if (server != null) {
            server.close();
        }
        closeResources();
        log.info("{} stopped ({})", name, loop.state());
    }
}
