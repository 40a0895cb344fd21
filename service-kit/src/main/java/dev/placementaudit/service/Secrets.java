package dev.placementaudit.service;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** How a service holds a shared secret (an API token, a fleet's token): as its SHA-256, compared in constant time. */
public final class Secrets {
    private Secrets() {
    }

    public static byte[] sha256(String secret) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(secret.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM ships SHA-256", e);
        }
    }

    public static String sha256Hex(String secret) {
        return HexFormat.of().formatHex(sha256(secret));
    }

    /** Whether {@code given} is the secret whose digest is {@code expected}; the time taken does not depend on where they differ. */
    public static boolean matches(byte[] expected, String given) {
        return given != null && MessageDigest.isEqual(expected, sha256(given));
    }
}
