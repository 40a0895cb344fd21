package dev.placementaudit.service;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import io.javalin.Javalin;
import io.javalin.config.JavalinConfig;
import io.javalin.json.JavalinJackson;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.SecureRequestCustomizer;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.SslConnectionFactory;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.ssl.SslContextFactory;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The HTTP side every service has: {@code GET /health} (200 when up, 503 when not, JSON either way) and
 * {@code GET /metrics} in Prometheus text format. A service with an API of its own adds its routes.
 *
 * <p>Safe by default: it listens where {@link HttpSettings} says (loopback unless configured), over TLS when a
 * keystore is configured, sends {@code X-Content-Type-Options: nosniff}, {@code Referrer-Policy: no-referrer},
 * {@code X-Frame-Options: DENY} and {@code Cache-Control: no-store} on every response (Jetty's own answers to a request
 * it cannot parse included: a 400 for an ambiguous path, a 431 for oversized headers), answers no cross-origin request
 * unless origins are configured, and answers an unknown path (404) or method (405) in JSON like every other error.
 */
public final class OpsServer implements AutoCloseable {
    private static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";
    /** A request attribute a route sets when it answered an error itself, so the JSON 404 for unknown paths leaves it be. */
    public static final String ANSWERED = "pa.answered";

    /** The headers every response carries, the server's own error pages included. */
    private static final Map<String, String> SECURITY_HEADERS = Map.of("X-Content-Type-Options", "nosniff", "Referrer-Policy", "no-referrer",
            "X-Frame-Options", "DENY", "Cache-Control", "no-store");

    private final Javalin app;
    private final HttpSettings settings;

    private OpsServer(Javalin app, HttpSettings settings) {
        this.app = app;
        this.settings = settings;
    }

    public static OpsServer start(HttpSettings settings, PrometheusMeterRegistry registry, Supplier<Health> health,
                                  Consumer<JavalinConfig> moreRoutes) {
        Javalin app = Javalin.create(config -> {
            config.startup.showJavalinBanner = false;
            config.startup.showOldJavalinVersionWarning = false;
            config.http.prefer405over404 = true;
            // Times as ISO-8601 text (2026-11-01T10:00:00Z), as the CLI's JSON writes them, not as epoch seconds.
            config.jsonMapper(new JavalinJackson(new ObjectMapper().registerModule(new JavaTimeModule())
                    .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS), false));
            settings.tls().ifPresent(tls -> config.jetty.addConnector((server, http) -> tlsConnector(server, http, settings, tls)));
            if (!settings.corsOrigins().isEmpty()) {
                config.bundledPlugins.enableCors(cors -> cors.addRule(rule -> settings.corsOrigins().forEach(rule::allowHost)));
            }
            // A request Jetty refuses before any route runs (a path it will not resolve, headers over its limit) is answered
            // by the server's error handler, which the routes' before-handler never sees.
            config.jetty.modifyServer(server -> server.setErrorHandler(new HardenedErrors()));
            config.routes.before(ctx -> SECURITY_HEADERS.forEach(ctx::header));
            config.routes.error(404, ctx -> {
                if (ctx.attribute(ANSWERED) == null) {
                    ctx.json(Map.of("error", "no such path: " + ctx.method() + " " + ctx.path()));
                }
            });
            config.routes.error(405, ctx -> ctx.json(Map.of("error", "method " + ctx.method() + " not allowed on " + ctx.path())));
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
        if (settings.tls().isPresent()) {
            app.start();
        } else {
            app.start(settings.host(), settings.port());
        }
        return new OpsServer(app, settings);
    }

    /** HTTPS only (no plain connector): the certificate is the keystore's; SNI is not required to match it. */
    private static ServerConnector tlsConnector(Server server, HttpConfiguration http, HttpSettings settings,
                                                HttpSettings.Tls tls) {
        SslContextFactory.Server ssl = new SslContextFactory.Server();
        ssl.setKeyStorePath(tls.keystore().toAbsolutePath().toString());
        ssl.setKeyStorePassword(tls.password());
        ssl.setKeyStoreType(tls.type());
        HttpConfiguration https = new HttpConfiguration(http);
        SecureRequestCustomizer secure = new SecureRequestCustomizer();
        // Clients often reach a service by IP or by a name its certificate does not list; the certificate is still checked by them.
        secure.setSniHostCheck(false);
        https.addCustomizer(secure);
        ServerConnector connector = new ServerConnector(server, new SslConnectionFactory(ssl, "http/1.1"), new HttpConnectionFactory(https));
        connector.setHost(settings.host());
        connector.setPort(Math.max(0, settings.port()));
        return connector;
    }

    /** Jetty's error pages, with the headers every other response has, and no stack trace. */
    private static final class HardenedErrors extends ErrorHandler {
        HardenedErrors() {
            setShowStacks(false);
            setShowCauses(false);
            setCacheControl(SECURITY_HEADERS.get("Cache-Control"));
        }

        @Override
        public boolean handle(Request request, Response response,
                              Callback callback) throws Exception {
            SECURITY_HEADERS.forEach((name, value) -> response.getHeaders().put(name, value));
            return super.handle(request, response, callback);
        }
    }

    /** The bound port; useful when started on port 0. */
    public int port() {
        if (settings.tls().isPresent()) {
            return ((ServerConnector) app.jettyServer().server().getConnectors()[0]).getLocalPort();
        }
        return app.port();
    }

    /** {@code http(s)://host:port}, as a client on this machine would reach it. */
    public String url() {
        return settings.scheme() + "://" + settings.host() + ":" + port();
    }

    @Override
    public void close() {
        app.stop();
    }
}
