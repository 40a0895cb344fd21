package dev.placementaudit.store.api;

import dev.placementaudit.core.format.TensorEncoding;
import dev.placementaudit.core.format.TensorEncodings;
import dev.placementaudit.service.HttpSettings;
import dev.placementaudit.service.OpsServer;
import dev.placementaudit.service.Secrets;
import dev.placementaudit.store.query.AuditQueries;
import dev.placementaudit.store.replay.WhatIf;
import io.javalin.config.JavalinConfig;
import io.javalin.http.Context;
import io.javalin.http.HttpResponseException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The read-only JSON API under {@code /api}. Every input is validated before it reaches SQL (which is
 * parameterised anyway); a bad one is a 400 naming the parameter. With a token configured ({@code store.api.token}),
 * every API request needs {@code Authorization: Bearer <token>}, or the HttpOnly cookie {@code POST /session} sets for
 * the dashboard; a token in a URL ({@code ?token=}) is refused. The dashboard is served with a Content-Security-Policy
 * that allows its own script, style and API only.
 *
 * <pre>
 * GET /api/loads?deployment=&amp;model=&amp;release=&amp;limit=   loads, newest first
 * GET /api/loads/{loadId}                           where every tensor of the load landed, and why
 * GET /api/diff?deployment=&amp;model=&amp;from=&amp;to=[&amp;fromRuntime=&amp;toRuntime=]
 *                                                   two releases (or two runtime builds on one) compared tensor by tensor
 * GET /api/fleet?release=                           one release across the fleet
 * GET /api/alerts?deployment=&amp;limit=                alerts, newest first, each with its root causes and top tensors
 * GET /api/releases                                 releases with a complete load, oldest first
 * GET /api/tensor-history?deployment=&amp;model=&amp;tensor=&amp;limit=  one tensor's placement in each load, oldest first
 * GET /api/whatif?from=&amp;to=&amp;deployment=&amp;model=&amp;threshold=&amp;servable=&amp;offheap=&amp;mappedFiles=
 *                                                   history re-resolved under a candidate policy
 * </pre>
 */
public final class ApiRoutes {
    /** Deployment, model and release names: what ids look like in practice, and nothing that needs escaping. */
    private static final Pattern ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,199}");
    /** A runtime and its build as the store keeps them ({@code llama.cpp b4916 AVX2,FMA mmap}), or the start of that. */
    private static final Pattern RUNTIME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:@/+, -]{0,199}");
    private static final int MAX_LIMIT = 1_000;

    private ApiRoutes() {
    }

    /**
     * What the dashboard page may load and do: its own script, style and API, nothing inline, no framing, no
     * other origin.
     */
    static final String DASHBOARD_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
            + "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
    /** Javalin's limit on a request body (its default): a sign-in is a few dozen bytes. */
    static final long MAX_BODY_BYTES = 1_000_000;
    /**
     * The cookie the dashboard's sign-in sets, naming a server-side session ({@link Sessions}): HttpOnly, so no script reads
     * it; SameSite=Strict, so no other site sends it.
     */
    static final String SESSION_COOKIE = "pa_session";

    public static void install(JavalinConfig config, AuditQueries queries, WhatIf whatIf, HttpSettings http) {
        Optional<TokenCheck> check = http.token().map(TokenCheck::new);
        Sessions sessions = new Sessions(Clock.systemUTC());
        config.routes.before(ctx -> {
            if (ctx.queryParam("token") != null) {
                throw new ApiException(400, "a token in a URL ends up in logs, history and Referer headers, so it is refused: send "
                        + "'Authorization: Bearer <token>', or sign in on the dashboard");
            }
        });
        check.ifPresent(tokens -> config.routes.before("/api/*", ctx -> {
            String header = ctx.header("Authorization");
            // The scheme is case-insensitive (RFC 9110): "bearer" is as good as "Bearer".
            boolean allowed = header != null ? header.regionMatches(true, 0, "Bearer ", 0, 7) && tokens.matches(header.substring(7).strip())
                    : sessions.valid(ctx.cookie(SESSION_COOKIE));
            if (!allowed) {
                ctx.header("WWW-Authenticate", "Bearer");
                throw new ApiException(401, "missing or wrong token: send 'Authorization: Bearer <token>'");
            }
        }));
        config.routes.post("/session", ctx -> {
            if (check.isEmpty()) {
                ctx.status(204);
                return;
            }
            String given;
            try {
                given = ctx.bodyAsClass(SignIn.class).token();
            } catch (HttpResponseException e) {
                if (e.getStatus() == 413) {
                    throw new ApiException(413, "the body is over " + MAX_BODY_BYTES + " bytes; a sign-in is {\"token\": \"...\"}");
                }
                throw e;
            } catch (Exception e) { // Jackson's own (checked) exceptions come through Kotlin undeclared
                throw new ApiException(400, "expected a JSON body {\"token\": \"...\"}");
            }
            if (!check.get().matches(given)) {
                throw new ApiException(401, "wrong token");
            }
            ctx.header("Set-Cookie", SESSION_COOKIE + "=" + sessions.open() + "; Path=/; Max-Age=" + Sessions.TTL.toSeconds()
                    + "; HttpOnly; SameSite=Strict" + (http.tls().isPresent() ? "; Secure" : ""));
            ctx.status(204);
        });
        config.routes.delete("/session", ctx -> {
            sessions.revoke(ctx.cookie(SESSION_COOKIE));
            ctx.header("Set-Cookie", SESSION_COOKIE + "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict");
            ctx.status(204);
        });
        String page = resource("index.html");
        String style = resource("dashboard.css");
        config.routes.get("/", ctx -> ctx.header("Content-Security-Policy", DASHBOARD_POLICY).html(page));
        for (String name : List.of("charts.js", "incidents.js", "dashboard.js")) {
            String script = resource(name);
            config.routes.get("/" + name, ctx -> ctx.contentType("text/javascript; charset=utf-8").result(script));
        }
        config.routes.get("/dashboard.css", ctx -> ctx.contentType("text/css; charset=utf-8").result(style));
        config.routes.exception(ApiException.class, (e, ctx) -> {
            ctx.attribute(OpsServer.ANSWERED, true);
            ctx.status(e.status()).json(Map.of("error", e.getMessage()));
        });
        config.routes.exception(SQLException.class, (e, ctx) -> ctx.status(503).json(Map.of("error", "database unavailable")));
        config.routes.get("/api/loads", ctx -> ctx.json(queries.loads(id(ctx, "deployment", false), id(ctx, "model", false),
                id(ctx, "release", false), limit(ctx))));
        config.routes.get("/api/loads/{loadId}", ctx -> ctx.json(queries.load(uuid(ctx.pathParam("loadId")))
                .orElseThrow(() -> new ApiException(404, "no load " + ctx.pathParam("loadId")))));
        config.routes.get("/api/diff", ctx -> ctx.json(queries.diff(id(ctx, "deployment", true), id(ctx, "model", true),
                        id(ctx, "from", true), id(ctx, "to", true), runtime(ctx, "fromRuntime"), runtime(ctx, "toRuntime"))
                .orElseThrow(() -> new ApiException(404, "no complete load for one of the two sides"))));
        config.routes.get("/api/fleet", ctx -> ctx.json(queries.fleet(id(ctx, "release", true))));
        config.routes.get("/api/releases", ctx -> ctx.json(queries.releases()));
        config.routes.get("/api/tensor-history", ctx -> ctx.json(queries.tensorHistory(id(ctx, "deployment", true), id(ctx, "model", true),
                tensorName(ctx), limit(ctx))));
        config.routes.get("/api/incidents", ctx -> ctx.json(queries.incidents("true".equals(ctx.queryParam("open")), id(ctx, "release", false),
                id(ctx, "model", false), limit(ctx))));
        config.routes.get("/api/incident", ctx -> {
            String id = id(ctx, "id", true);
            try {
                ctx.json(queries.incident(id).orElseThrow(() -> new ApiException(404, "no incident " + id)));
            } catch (IllegalArgumentException e) {
                throw new ApiException(400, e.getMessage());
            }
        });
        config.routes.get("/api/alerts", ctx -> ctx.json(queries.alerts(id(ctx, "deployment", false), limit(ctx))));
        config.routes.get("/api/whatif", ctx -> {
            if (whatIf == null) {
                throw new ApiException(503, "what-if needs the store's Kafka connection");
            }
            ctx.json(whatIf.run(new WhatIf.Query(instant(ctx, "from", Instant.EPOCH),
                    instant(ctx, "to", Instant.now()), id(ctx, "deployment", false), id(ctx, "model", false), candidate(ctx))));
        });
    }

    /** The dashboard's sign-in body. */
    public record SignIn(String token) {
    }

    /**
     * Compares a presented token with the configured one in constant time: both are hashed first, so neither the
     * position of the first wrong character nor the token's length shows in the time a refusal takes.
     */
    static final class TokenCheck {
        private final byte[] expected;

        TokenCheck(String token) {
            this.expected = Secrets.sha256(token);
        }

        boolean matches(String given) {
            return Secrets.matches(expected, given);
        }
    }

    /** The dashboard's files: no build step, everything it shows comes from this API. */
    private static String resource(String name) {
        try (var in = ApiRoutes.class.getResourceAsStream("/dashboard/" + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException | NullPointerException e) {
            throw new IllegalStateException("the dashboard's " + name + " is missing from the audit-store jar", e);
        }
    }

    static String id(Context ctx, String name, boolean required) {
        return matching(ctx, name, required, ID, "letters, digits and ._:@/+-");
    }

    /**
     * A runtime's prefix as {@code store diff --from-runtime} takes it ({@code llama.cpp b4916}): an id's characters,
     * spaces and commas, or null when not given.
     */
    static String runtime(Context ctx, String name) {
        return matching(ctx, name, false, RUNTIME, "letters, digits, spaces and ._:@/+,-");
    }

    /** The query parameter when it matches {@code pattern}; null when it is not given and not required; else a 400 saying why. */
    private static String matching(Context ctx, String name, boolean required, Pattern pattern, String allowed) {
        String value = ctx.queryParam(name);
        if (value == null || value.isEmpty()) {
            if (required) {
                throw new ApiException(400, "query parameter '" + name + "' is required");
            }
            return null;
        }
        if (!pattern.matcher(value).matches()) {
            throw new ApiException(400, "query parameter '" + name + "' must be 1-200 characters of " + allowed);
        }
        return value;
    }

    /** A tensor name: any printable text up to the column's 1,000 characters. */
    static String tensorName(Context ctx) {
        String value = ctx.queryParam("tensor");
        if (value == null || value.isEmpty()) {
            throw new ApiException(400, "query parameter 'tensor' is required");
        }
        if (value.length() > 1_000 || value.chars().anyMatch(ch -> ch < 0x20 || ch == 0x7f)) {
            throw new ApiException(400, "query parameter 'tensor' must be 1-1000 printable characters");
        }
        return value;
    }

    static Instant instant(Context ctx, String name, Instant fallback) {
        String value = ctx.queryParam(name);
        if (value == null || value.isEmpty()) {
            return fallback;
        }
        try {
            return Instant.parse(value);
        } catch (DateTimeParseException e) {
            throw new ApiException(400, "query parameter '" + name + "' must be an ISO instant such as 2026-11-01T00:00:00Z");
        }
    }

    static WhatIf.CandidatePolicy candidate(Context ctx) {
        String threshold = ctx.queryParam("threshold");
        OptionalLong thresholdBytes = OptionalLong.empty();
        if (threshold != null && !threshold.isEmpty()) {
            try {
                long bytes = Long.parseLong(threshold);
                if (bytes <= 0) {
                    throw new NumberFormatException();
                }
                thresholdBytes = OptionalLong.of(bytes);
            } catch (NumberFormatException e) {
                throw new ApiException(400, "query parameter 'threshold' must be a positive number of bytes");
            }
        }
        String servable = ctx.queryParam("servable");
        Optional<Set<TensorEncoding>> encodings = Optional.empty();
        if (servable != null) {
            try {
                encodings = Optional.of(Arrays.stream(servable.split(",")).map(String::trim).filter(x -> !x.isEmpty())
                        .map(TensorEncodings::parseKnown).collect(Collectors.toSet()));
            } catch (IllegalArgumentException e) {
                throw new ApiException(400, "query parameter 'servable': " + e.getMessage());
            }
        }
        return new WhatIf.CandidatePolicy(thresholdBytes, encodings, bool(ctx, "offheap"), bool(ctx, "mappedFiles"));
    }

    static Optional<Boolean> bool(Context ctx, String name) {
        String value = ctx.queryParam(name);
        if (value == null || value.isEmpty()) {
            return Optional.empty();
        }
        if (!value.equals("true") && !value.equals("false")) {
            throw new ApiException(400, "query parameter '" + name + "' must be true or false");
        }
        return Optional.of(Boolean.parseBoolean(value));
    }

    static int limit(Context ctx) {
        String value = ctx.queryParam("limit");
        if (value == null || value.isEmpty()) {
            return 100;
        }
        try {
            int limit = Integer.parseInt(value);
            if (limit >= 1 && limit <= MAX_LIMIT) {
                return limit;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new ApiException(400, "query parameter 'limit' must be a whole number from 1 to " + MAX_LIMIT);
    }

    static String uuid(String value) {
        try {
            return UUID.fromString(value).toString();
        } catch (IllegalArgumentException e) {
            throw new ApiException(400, "'" + (value.length() > 40 ? value.substring(0, 40) + "..." : value) + "' is not a load id (a UUID)");
        }
    }

    /** A refusal with its HTTP status. */
    static final class ApiException extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final int status;

        ApiException(int status, String message) {
            super(message);
            this.status = status;
        }

        int status() {
            return status;
        }
    }
}
