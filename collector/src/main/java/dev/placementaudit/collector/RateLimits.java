package dev.placementaudit.collector;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * A token bucket per fleet: {@code burst} requests at once, refilled at {@code requestsPerSecond}. A request over the
 * rate is told how long until it would be taken (the 429's {@code Retry-After}), rather than queued: a fleet of phones
 * retrying on a schedule is back-pressure the collector does not have to hold in memory.
 */
final class RateLimits {
    private final Map<String, Bucket> buckets = new ConcurrentHashMap<>();
    private final LongSupplier nanos;

    RateLimits(LongSupplier nanos) {
        this.nanos = nanos;
    }

    /** Zero when {@code fleet} may send now (and one request is taken), else how long until it may. */
    Duration take(Fleet fleet) {
        return buckets.computeIfAbsent(fleet.name(), name -> new Bucket(fleet.requestsPerSecond(), fleet.burst(), nanos.getAsLong()))
                .take(nanos.getAsLong());
    }

    private static final class Bucket {
        private final double perNano;
        private final double capacity;
        private double available;
        private long at;

        Bucket(double perSecond, int burst, long now) {
            this.perNano = perSecond / 1e9;
            this.capacity = burst;
            this.available = burst;
            this.at = now;
        }

        synchronized Duration take(long now) {
            available = Math.min(capacity, available + (now - at) * perNano);
            at = now;
            if (available >= 1) {
                available -= 1;
                return Duration.ZERO;
            }
            return Duration.ofNanos((long) Math.ceil((1 - available) / perNano));
        }
    }
}
