package dev.placementaudit.producer.collect;

import java.io.IOException;
import java.net.URI;
import java.util.Optional;

/**
 * What a failed exchange with the collector says: an outage (the spool's case, said in a few words) or a mistake in the
 * set-up that no retry can fix (TLS, the scheme), said at once.
 */
final class ExchangeFailure {
    private ExchangeFailure() {
    }

    /** An outage in a few words: what the JDK calls it, and its message when it has one. */
    static String describe(IOException e) {
        String kind = e instanceof java.net.ConnectException || e.getCause() instanceof java.net.ConnectException ? "connection refused"
                : e instanceof java.net.http.HttpConnectTimeoutException ? "connect timed out"
                : e instanceof java.net.http.HttpTimeoutException ? "no answer in time" : e.getClass().getSimpleName();
        return e.getMessage() == null || e.getMessage().isBlank() ? kind : kind + ": " + e.getMessage();
    }

    /**
     * What a failed exchange says of the set-up, when it is no outage: a TLS handshake that failed (a certificate this JVM
     * does not trust, a name it was not issued for, {@code https://} to a port that serves plain HTTP), or {@code http://}
     * to a port that answered with no HTTP (one that serves HTTPS). A refused connection or a timeout is an outage: empty.
     */
    static Optional<String> setUpMistake(IOException e, URI endpoint) {
        // A certificate refused (not trusted, expired, issued for another name), or https:// to a port that answers in plain
        // HTTP. A handshake cut short (a collector killed, a network gone) is an outage.
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof java.security.cert.CertificateException || t instanceof java.security.GeneralSecurityException) {
                return Optional.of("TLS with the collector at " + endpoint + " failed: its certificate was refused (" + t.getMessage()
                        + "): a certificate this JVM does not trust? JAVA_OPTS=-Djavax.net.ssl.trustStore=FILE");
            }
            if (t instanceof javax.net.ssl.SSLException && String.valueOf(t.getMessage()).contains("nsupported or unrecognized SSL message")) {
                return Optional.of("TLS with the collector at " + endpoint + " failed: the port answers in plain HTTP; use http://");
            }
        }
        // http:// to a port that serves HTTPS: the answer to the status line is a TLS record (an alert, 0x15 0x03, or a
        // handshake, 0x16 0x03). A connection cut mid-answer (a collector killed) reads otherwise, and is an outage.
        String message = String.valueOf(e.getMessage());
        if ("http".equalsIgnoreCase(endpoint.getScheme()) && message.contains("status line")
                && (message.contains("[\u0015\u0003") || message.contains("[\u0016\u0003"))) {
            return Optional.of("the collector at " + endpoint + " answered in TLS, not HTTP: it is served over HTTPS; use https://");
        }
        return Optional.empty();
    }
}
