package dev.placementaudit.service;

import org.slf4j.Logger;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

/**
 * A failure that repeats while something is away (a broker, a database), said as an operator wants to read it: a WARN
 * when it starts, the repeats at DEBUG (counted), a WARN again every {@link #REMINDER} while it lasts, and an INFO when it
 * ends with how long it lasted and how many tries failed. One broker outage is then three lines, not one a second.
 */
public final class Outage {
    /** How often a failure that goes on is said again at WARN. */
    public static final Duration REMINDER = Duration.ofMinutes(5);

    private final Logger log;
    private final String what;
    private final Clock clock;
    private int failures;
    private Instant since;
    /** Whether a failure is ongoing, read without the lock: {@link #ended} is called after every success, on hot paths. */
    private volatile boolean down;
    private Instant warned;

    /** @param what what fails, as the start of a sentence: "reconciling", "publishing incident events" */
    public Outage(Logger log, String what) {
        this(log, what, Clock.systemUTC());
    }

    Outage(Logger log, String what, Clock clock) {
        this.log = log;
        this.what = what;
        this.clock = clock;
    }

    /** One more failure, {@code cause} saying why (an exception's {@code toString}, a sentence). */
    public synchronized void failed(String cause) {
        Instant now = clock.instant();
        failures++;
        if (since == null) {
            since = now;
            warned = now;
            down = true;
            log.warn("{} failed ({}); repeats are logged at DEBUG until it works", what, cause);
        } else if (!warned.plus(REMINDER).isAfter(now)) {
            warned = now;
            log.warn("{} still fails after {} tries over {} s ({})", what, failures, Duration.between(since, now).toSeconds(), cause);
        } else {
            log.debug("{} failed again ({}), {} tries since {}", what, cause, failures, since);
        }
    }

    /** It worked: said once if it had failed, with how long and how many tries. */
    public void ended() {
        if (down) {
            endedNow();
        }
    }

    private synchronized void endedNow() {
        if (since != null) {
            log.info("{} works again after {} failed tries over {} s", what, failures, Duration.between(since, clock.instant()).toSeconds());
            since = null;
            failures = 0;
            down = false;
        }
    }

    /** Whether it is failing now. */
    public boolean ongoing() {
        return down;
    }
}
