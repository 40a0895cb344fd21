package dev.placementaudit.store.api;

import dev.placementaudit.store.query.AuditQueries;
import io.javalin.config.JavalinConfig;
import io.javalin.http.Context;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * The read-only JSON API under {@code /api}. Every input is validated before it reaches SQL (which is
 * parameterised anyway); a bad one is a 400 naming the parameter. With a token configured, every request needs
 * {@code Authorization: Bearer <token>}.
 *
 * <pre>
 * GET /api/loads?deployment=&amp;model=&amp;release=&amp;limit=   loads, newest first
 * GET /api/loads/{loadId}                           where every tensor of the load landed, and why
 * GET /api/diff?deployment=&amp;model=&amp;from=&amp;to=           two releases compared tensor by tensor
 * GET /api/fleet?release=                           one release across the fleet
 * GET /api/alerts?deployment=&amp;limit=                alerts, newest first
 * GET /api/whatif?from=&amp;to=&amp;deployment=&amp;model=&amp;threshold=&amp;servable=&amp;offheap=&amp;mappedFiles=
 *                                                   history re-resolved under a candidate policy
 * </pre>
 */
public final class ApiRoutes {
    /** Deployment, model and release names: what ids look like in practice, and nothing that needs escaping. */
    private static final Pattern ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,199}");
    private static final int MAX_LIMIT = 1_000;

    private ApiRoutes() {
    }

    public static void install(JavalinConfig config, AuditQueries queries, dev.placementaudit.store.replay.WhatIf whatIf, String token) {
        if (token != null && !token.isBlank()) {
            byte[] expected = ("Bearer " + token).getBytes(StandardCharsets.UTF_8);
            config.routes.before("/api/*", ctx -> {
                String given = ctx.header("Authorization");
                if (given == null || !MessageDigest.isEqual(expected, given.getBytes(StandardCharsets.UTF_8))) {
                    throw new ApiException(401, "missing or wrong bearer token");
                }
            });
        }
        String dashboard = dashboard();
        config.routes.get("/", ctx -> ctx.html(dashboard));
        config.routes.exception(ApiException.class, (e, ctx) -> ctx.status(e.status()).json(Map.of("error", e.getMessage())));
        config.routes.exception(java.sql.SQLException.class, (e, ctx) -> ctx.status(503).json(Map.of("error", "database unavailable")));
        config.routes.get("/api/loads", ctx -> ctx.json(queries.loads(id(ctx, "deployment", false), id(ctx, "model", false),
                id(ctx, "release", false), limit(ctx))));
        config.routes.get("/api/loads/{loadId}", ctx -> ctx.json(queries.load(uuid(ctx.pathParam("loadId")))
                .orElseThrow(() -> new ApiException(404, "no load " + ctx.pathParam("loadId")))));
        config.routes.get("/api/diff", ctx -> ctx.json(queries.diff(id(ctx, "deployment", true), id(ctx, "model", true),
                        id(ctx, "from", true), id(ctx, "to", true))
                .orElseThrow(() -> new ApiException(404, "no complete load for one of the two releases"))));
        config.routes.get("/api/fleet", ctx -> ctx.json(queries.fleet(id(ctx, "release", true))));
        config.routes.get("/api/alerts", ctx -> ctx.json(queries.alerts(id(ctx, "deployment", false), limit(ctx))));
        config.routes.get("/api/whatif", ctx -> {
            if (whatIf == null) {
                throw new ApiException(503, "what-if needs the store's Kafka connection");
            }
            ctx.json(whatIf.run(new dev.placementaudit.store.replay.WhatIf.Query(instant(ctx, "from", java.time.Instant.EPOCH),
                    instant(ctx, "to", java.time.Instant.now()), id(ctx, "deployment", false), id(ctx, "model", false), candidate(ctx))));
        });
    }

    /** The dashboard: one page, no build step, everything it shows comes from this API. */
    private static String dashboard() {
        try (var in = ApiRoutes.class.getResourceAsStream("/dashboard/index.html")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (java.io.IOException | NullPointerException e) {
            throw new IllegalStateException("the dashboard page is missing from the audit-store jar", e);
        }
    }

    static String id(Context ctx, String name, boolean required) {
        String value = ctx.queryParam(name);
        if (value == null || value.isEmpty()) {
            if (required) {
                throw new ApiException(400, "query parameter '" + name + "' is required");
            }
            return null;
        }
        if (!ID.matcher(value).matches()) {
            throw new ApiException(400, "query parameter '" + name + "' must be 1-200 characters of letters, digits and ._:@/+-");
        }
        return value;
    }

    static java.time.Instant instant(Context ctx, String name, java.time.Instant fallback) {
        String value = ctx.queryParam(name);
        if (value == null || value.isEmpty()) {
            return fallback;
        }
        try {
            return java.time.Instant.parse(value);
        } catch (java.time.format.DateTimeParseException e) {
            throw new ApiException(400, "query parameter '" + name + "' must be an ISO instant such as 2026-11-01T00:00:00Z");
        }
    }

    static dev.placementaudit.store.replay.WhatIf.CandidatePolicy candidate(Context ctx) {
        String threshold = ctx.queryParam("threshold");
        java.util.OptionalLong thresholdBytes = java.util.OptionalLong.empty();
        if (threshold != null && !threshold.isEmpty()) {
            try {
                long bytes = Long.parseLong(threshold);
                if (bytes <= 0) {
                    throw new NumberFormatException();
                }
                thresholdBytes = java.util.OptionalLong.of(bytes);
            } catch (NumberFormatException e) {
                throw new ApiException(400, "query parameter 'threshold' must be a positive number of bytes");
            }
        }
        String servable = ctx.queryParam("servable");
        java.util.Optional<java.util.Set<dev.placementaudit.core.format.TensorEncoding>> encodings = java.util.Optional.empty();
        if (servable != null) {
            try {
                encodings = java.util.Optional.of(java.util.Arrays.stream(servable.split(",")).map(String::trim).filter(x -> !x.isEmpty())
                        .map(dev.placementaudit.core.format.TensorEncodings::parseKnown).collect(java.util.stream.Collectors.toSet()));
            } catch (IllegalArgumentException e) {
                throw new ApiException(400, "query parameter 'servable': " + e.getMessage());
            }
        }
        return new dev.placementaudit.store.replay.WhatIf.CandidatePolicy(thresholdBytes, encodings, bool(ctx, "offheap"), bool(ctx, "mappedFiles"));
    }

    static java.util.Optional<Boolean> bool(Context ctx, String name) {
        String value = ctx.queryParam(name);
        if (value == null || value.isEmpty()) {
            return java.util.Optional.empty();
        }
        if (!value.equals("true") && !value.equals("false")) {
            throw new ApiException(400, "query parameter '" + name + "' must be true or false");
        }
        return java.util.Optional.of(Boolean.parseBoolean(value));
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
