package dev.placementaudit.service;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Where a service listens and how: {@code <prefix>.http.host} (default 127.0.0.1: nothing is reachable from
 * another machine unless configured), {@code <prefix>.http.port}, TLS from a keystore
 * ({@code <prefix>.http.tls.keystore}, {@code .keystore.password}, {@code .keystore.type}), the API token
 * ({@code <prefix>.api.token}), {@code <prefix>.api.insecure} to serve a non-loopback address without one, and
 * {@code <prefix>.http.cors.origins} (none by default: no CORS headers at all). Secrets never appear in
 * {@link #toString()}.
 */
public record HttpSettings(String host, int port, Optional<Tls> tls, Optional<String> token, boolean insecure, List<String> corsOrigins) {
    public static final String LOOPBACK = "127.0.0.1";

    public HttpSettings {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(tls, "tls");
        Objects.requireNonNull(token, "token");
        corsOrigins = List.copyOf(corsOrigins);
    }

    /** A keystore holding the server's key and certificate. */
    public record Tls(Path keystore, String password, String type) {
        @Override
        public String toString() {
            return "Tls[keystore=" + keystore + ", type=" + type + ", password=" + (password.isEmpty() ? "(none)" : "(set)") + "]";
        }
    }

    /** Plain HTTP on loopback, no token: what tests and the embedded demo use. */
    public static HttpSettings loopback(int port) {
        return new HttpSettings(LOOPBACK, port, Optional.empty(), Optional.empty(), false, List.of());
    }

    public static HttpSettings from(Settings settings, String prefix, int defaultPort) {
        String host = settings.string(prefix + ".http.host", LOOPBACK).trim();
        int port = settings.integer(prefix + ".http.port", defaultPort, -1, 65_535);
        Optional<Tls> tls = Optional.empty();
        String keystore = settings.string(prefix + ".http.tls.keystore", null);
        // Read whether or not a keystore is set, so that neither is reported as an unknown setting.
        String password = settings.string(prefix + ".http.tls.keystore.password", "");
        String type = settings.string(prefix + ".http.tls.keystore.type", "PKCS12");
        if (keystore != null && !keystore.isBlank()) {
            Path path = Path.of(keystore.trim());
            if (!Files.isReadable(path)) {
                throw new ConfigException(prefix + ".http.tls.keystore", keystore, "is not a readable file");
            }
            tls = Optional.of(new Tls(path, password, type));
        }
        String token = settings.string(prefix + ".api.token", null);
        return new HttpSettings(host, port, tls, Optional.ofNullable(token).filter(t -> !t.isBlank()),
                settings.bool(prefix + ".api.insecure", false), settings.list(prefix + ".http.cors.origins"));
    }

    /** Whether {@link #host} is a loopback address (127.0.0.0/8, ::1, or a name resolving to one). */
    public boolean loopbackOnly() {
        try {
            for (InetAddress address : InetAddress.getAllByName(host)) {
                if (!address.isLoopbackAddress()) {
                    return false;
                }
            }
            return true;
        } catch (UnknownHostException e) {
            return false;
        }
    }

    /**
     * Refuses a configuration that would serve the API to other machines with no token: {@code prefix.api.token}
     * or, deliberately, {@code prefix.api.insecure=true}.
     */
    public HttpSettings requireTokenOffLoopback(String prefix) {
        if (port >= 0 && !loopbackOnly() && token.isEmpty() && !insecure) {
            throw new ConfigException(prefix + ".http.host", host, "is not a loopback address, and the API would answer anyone who reaches it: "
                    + "set " + prefix + ".api.token (clients send Authorization: Bearer <token>), or " + prefix
                    + ".api.insecure=true to serve it without one");
        }
        return this;
    }

    public String scheme() {
        return tls.isPresent() ? "https" : "http";
    }

    @Override
    public String toString() {
        return "HttpSettings[" + scheme() + "://" + host + ":" + port + tls.map(t -> ", " + t).orElse("") + ", token="
                + (token.isPresent() ? "(set)" : "(none)") + (insecure ? ", insecure" : "") + (corsOrigins.isEmpty() ? "" : ", cors=" + corsOrigins) + "]";
    }
}
