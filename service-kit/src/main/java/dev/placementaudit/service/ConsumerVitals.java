package dev.placementaudit.service;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * What a consuming service can tell about its own progress: how long it has had no connection to any broker, how long
 * since it last heartbeated to its group coordinator, how long it has had no partition at all, and how long it has lagged
 * with nothing committed. Sampled by the service's loop after each poll, on that thread (a consumer is not for sharing),
 * and read by {@code /health} from any other. A condition counts only once it has lasted past the bound, so a rebalance
 * or a broker's restart does not flap the service's health.
 */
public final class ConsumerVitals {
    /** Beyond this, a heartbeat age is Kafka's "never sent" (seconds since the epoch), not an outage. */
    private static final double NEVER = 10 * 365 * 24 * 3600.0;

    private final Duration bound;
    private final Clock clock;
    private volatile Instant unassignedSince;
    private volatile Instant disconnectedSince;
    private volatile Instant lastProgress;
    private volatile double heartbeatAgeSeconds;
    private volatile double lag;

    public ConsumerVitals(Duration bound, Clock clock) {
        this.bound = bound;
        this.clock = clock;
        Instant now = clock.instant();
        this.unassignedSince = now;
        this.lastProgress = now;
    }

    /**
     * After each poll, on the loop's thread. The lag is what can be consumed now: each assigned partition's position
     * after the poll against the end it can read to (the last stable offset under read_committed, so the marker that
     * ends a transaction is not a record behind), summed. Not the client's {@code records-lag-max}: that is the largest
     * lag seen over its sample window, and kept a caught-up service "behind" for a minute after it caught up.
     */
    public void sample(Consumer<?, ?> consumer) {
        double behind = 0;
        for (TopicPartition partition : consumer.assignment()) {
            behind += consumer.currentLag(partition).orElse(0);
        }
        sample(consumer.assignment(), consumer.metrics(), behind);
    }

    void sample(Set<?> assignment, Map<MetricName, ? extends Metric> metrics, double behind) {
        Instant now = clock.instant();
        if (assignment.isEmpty()) {
            if (unassignedSince == null) {
                unassignedSince = now;
            }
        } else {
            unassignedSince = null;
        }
        // The consumer's open connections to brokers: none at all is a cluster out of reach (or a network that is).
        if (value(metrics, "consumer-metrics", "connection-count") > 0) {
            disconnectedSince = null;
        } else if (disconnectedSince == null) {
            disconnectedSince = now;
        }
        heartbeatAgeSeconds = value(metrics, "consumer-coordinator-metrics", "last-heartbeat-seconds-ago");
        lag = behind;
        if (!(lag > 0)) {
            // Nothing is waiting: idle is not stalled.
            lastProgress = now;
        }
    }

    /** After each commit of the service's work. */
    public void progressed() {
        lastProgress = clock.instant();
    }

    /** Each condition that has lasted past the bound, in words; empty when there is none. */
    public List<String> problems() {
        Instant now = clock.instant();
        List<String> problems = new ArrayList<>();
        Instant disconnected = disconnectedSince;
        if (disconnected != null && Duration.between(disconnected, now).compareTo(bound) > 0) {
            problems.add("no connection to any Kafka broker for " + Duration.between(disconnected, now).toSeconds() + " s: the cluster is unreachable");
        }
        if (heartbeatAgeSeconds > bound.toSeconds() && heartbeatAgeSeconds < NEVER) {
            problems.add(String.format(Locale.ROOT, "no heartbeat to the group coordinator for %.0f s", heartbeatAgeSeconds));
        }
        Instant unassigned = unassignedSince;
        if (unassigned != null && Duration.between(unassigned, now).compareTo(bound) > 0) {
            problems.add("no partitions assigned for " + Duration.between(unassigned, now).toSeconds() + " s");
        }
        if (lag > 0 && Duration.between(lastProgress, now).compareTo(bound) > 0) {
            problems.add(String.format(Locale.ROOT, "%.0f records behind and nothing committed for %d s", lag, Duration.between(lastProgress, now).toSeconds()));
        }
        return problems;
    }

    /** Records behind, summed over the assigned partitions, as of the last sample. */
    public double lag() {
        return lag;
    }

    public Duration bound() {
        return bound;
    }

    private static double value(Map<MetricName, ? extends Metric> metrics, String group, String name) {
        for (Map.Entry<MetricName, ? extends Metric> e : metrics.entrySet()) {
            if (e.getKey().group().equals(group) && e.getKey().name().equals(name) && e.getValue().metricValue() instanceof Number n) {
                return n.doubleValue();
            }
        }
        return Double.NaN;
    }
}
