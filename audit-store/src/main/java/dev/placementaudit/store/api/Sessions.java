package dev.placementaudit.store.api;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The dashboard's signed-in sessions, kept by the server: a session id is 32 random bytes, worth nothing once it
 * expires ({@link #TTL}) or is signed out, so a cookie copied off a machine stops working when its owner signs out or by
 * the end of the day at the latest, without the token being rotated. Only a digest of each id is held, so a heap dump
 * holds no usable cookie. Sessions live in this instance: behind a load balancer over several store instances, sign
 * in to each (or pin the dashboard's users to one).
 */
final class Sessions {
    /** How long a sign-in lasts. */
    static final Duration TTL = Duration.ofHours(8);
    /** Sessions kept at most; signing in past it drops the oldest (a flood of sign-ins cannot exhaust the heap). */
    static final int MAX = 10_000;

    private static final SecureRandom RANDOM = new SecureRandom();
    private final Clock clock;
    /** Expiry by digest of the id, oldest sign-in first. */
    private final Map<String, Instant> live = new LinkedHashMap<>();

    Sessions(Clock clock) {
        this.clock = clock;
    }

    /** A new session; returns its id, for the cookie. */
    synchronized String open() {
        byte[] id = new byte[32];
        RANDOM.nextBytes(id);
        String session = HexFormat.of().formatHex(id);
        dropExpired();
        if (live.size() >= MAX) {
            Iterator<String> oldest = live.keySet().iterator();
            oldest.next();
            oldest.remove();
        }
        live.put(digest(session), clock.instant().plus(TTL));
        return session;
    }

    /** Whether the cookie names a live session. */
    synchronized boolean valid(String cookie) {
        if (cookie == null || cookie.isEmpty()) {
            return false;
        }
        String key = digest(cookie);
        Instant expires = live.get(key);
        if (expires == null) {
            return false;
        }
        if (!clock.instant().isBefore(expires)) {
            live.remove(key);
            return false;
        }
        return true;
    }

    /** Signs the session out: its cookie is worth nothing from now on. */
    synchronized void revoke(String cookie) {
        Optional.ofNullable(cookie).filter(c -> !c.isEmpty()).ifPresent(c -> live.remove(digest(c)));
    }

    private void dropExpired() {
        Instant now = clock.instant();
        live.values().removeIf(expires -> !now.isBefore(expires));
    }

    private static String digest(String id) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(id.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM ships SHA-256", e);
        }
    }
}
