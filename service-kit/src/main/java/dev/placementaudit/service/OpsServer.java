package dev.placementaudit.service;

import io.javalin.Javalin;
import io.javalin.config.JavalinConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The HTTP side every service has: {@code GET /health} (200 when up, 503 when not, JSON either way) and
 * {@code GET /metrics} in Prometheus text format. A service with an API of its own adds its routes.
 */
public final class OpsServer implements AutoCloseable {
    private static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

    private final Javalin app;

    private OpsServer(Javalin app) {
        this.app = app;
    }

    public static OpsServer start(String host, int port, PrometheusMeterRegistry registry, Supplier<Health> health,
                                  Consumer<JavalinConfig> moreRoutes) {
        Javalin app = Javalin.create(config -> {
            config.startup.showJavalinBanner = false;
            config.startup.showOldJavalinVersionWarning = false;
            config.routes.get("/metrics", ctx -> ctx.contentType(PROMETHEUS_TEXT).result(registry.scrape()));
            config.routes.get("/health", ctx -> {
                Health now = health.get();
                Map<String, Object> body = new LinkedHashMap<>();
                body.put("status", now.up() ? "UP" : "DOWN");
                body.putAll(now.details());
                ctx.status(now.up() ? 200 : 503).json(body);
            });
            moreRoutes.accept(config);
        });
        app.start(host, port);
        return new OpsServer(app);
    }

    public static OpsServer start(int port, PrometheusMeterRegistry registry, Supplier<Health> health) {
        return start("0.0.0.0", port, registry, health, config -> { });
    }

    /** The bound port; useful when started on port 0. */
    public int port() {
        return app.port();
    }

    @Override
    public void close() {
        app.stop();
    }
}
