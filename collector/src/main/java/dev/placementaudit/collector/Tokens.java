package dev.placementaudit.collector;

import dev.placementaudit.service.Secrets;

import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.List;
import java.util.Optional;

/**
 * Which fleet a bearer token is. The presented token is hashed and compared with every fleet's digest in constant time
 * ({@link MessageDigest#isEqual}), all of them every time, so neither the bytes of a digest nor which fleet matched can be
 * timed from outside.
 */
public final class Tokens {
    private static final String BEARER = "Bearer ";
    private final List<Fleet> fleets;

    public Tokens(List<Fleet> fleets) {
        this.fleets = List.copyOf(fleets);
    }

    /** The fleet whose token the {@code Authorization} header carries, or empty (no header, another scheme, no such token). */
    public Optional<Fleet> fleetOf(String authorization) {
        if (authorization == null || !authorization.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
            return Optional.empty();
        }
        byte[] presented = Secrets.sha256(authorization.substring(BEARER.length()).trim());
        Fleet matched = null;
        for (Fleet fleet : fleets) {
            if (MessageDigest.isEqual(presented, fleet.tokenDigest()) && matched == null) {
                matched = fleet;
            }
        }
        return Optional.ofNullable(matched);
    }

    public static String sha256Hex(String token) {
        return Secrets.sha256Hex(token);
    }

    /** A new token: 32 random bytes, URL-safe base64 without padding (43 characters). */
    public static String newToken() {
        byte[] bytes = new byte[32];
        new SecureRandom().nextBytes(bytes);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }
}
