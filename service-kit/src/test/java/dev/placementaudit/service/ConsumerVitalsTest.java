package dev.placementaudit.service;

import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** Which conditions make a consuming service unhealthy, and only once they have lasted past the bound. */
class ConsumerVitalsTest {
    private static final Set<TopicPartition> ASSIGNED = Set.of(new TopicPartition("t", 0));

    /** A clock the test moves. */
    private static final class Ticking extends Clock {
        Instant now = Instant.parse("2026-12-03T00:00:00Z");

        @Override
        public ZoneOffset getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }

        void advance(Duration by) {
            now = now.plus(by);
        }
    }

    private static Map<MetricName, Metric> metrics(double connections) {
        Map<MetricName, Metric> metrics = new HashMap<>();
        put(metrics, "consumer-metrics", "connection-count", connections);
        put(metrics, "consumer-coordinator-metrics", "last-heartbeat-seconds-ago", 1);
        return metrics;
    }

    private static void put(Map<MetricName, Metric> metrics, String group, String name, double value) {
        MetricName key = new MetricName(name, group, "", Map.of());
        metrics.put(key, new Metric() {
            @Override
            public MetricName metricName() {
                return key;
            }

            @Override
            public Object metricValue() {
                return value;
            }
        });
    }

    @Test
    void healthyWhileConnectedAssignedAndCommitting() {
        Ticking clock = new Ticking();
        ConsumerVitals vitals = new ConsumerVitals(Duration.ofSeconds(10), clock);

        vitals.sample(ASSIGNED, metrics(1), 500);
        clock.advance(Duration.ofSeconds(30));
        vitals.progressed();
        vitals.sample(ASSIGNED, metrics(1), 500);

        assertThat(vitals.problems()).isEmpty();
    }

    @Test
    void lagWithNothingCommittedPastTheBoundIsAStall() {
        Ticking clock = new Ticking();
        ConsumerVitals vitals = new ConsumerVitals(Duration.ofSeconds(10), clock);
        vitals.sample(ASSIGNED, metrics(1), 500);

        clock.advance(Duration.ofSeconds(5));
        assertThat(vitals.problems()).as("not yet past the bound").isEmpty();
        clock.advance(Duration.ofSeconds(10));
        vitals.sample(ASSIGNED, metrics(1), 500);

        assertThat(vitals.problems()).containsExactly("500 records behind and nothing committed for 15 s");
    }

    @Test
    void idleWithoutLagIsNotAStall() {
        Ticking clock = new Ticking();
        ConsumerVitals vitals = new ConsumerVitals(Duration.ofSeconds(10), clock);

        vitals.sample(ASSIGNED, metrics(1), 0);
        clock.advance(Duration.ofMinutes(10));
        vitals.sample(ASSIGNED, metrics(1), 0);

        assertThat(vitals.problems()).isEmpty();
    }

    @Test
    void noConnectionAndNoPartitionPastTheBoundAreBothNamed() {
        Ticking clock = new Ticking();
        ConsumerVitals vitals = new ConsumerVitals(Duration.ofSeconds(10), clock);
        vitals.sample(ASSIGNED, metrics(1), 0);

        vitals.sample(Set.of(), metrics(0), Double.NaN);
        clock.advance(Duration.ofSeconds(11));
        vitals.sample(Set.of(), metrics(0), Double.NaN);

        assertThat(vitals.problems()).containsExactly("no connection to any Kafka broker for 11 s: the cluster is unreachable",
                "no partitions assigned for 11 s");

        vitals.sample(ASSIGNED, metrics(1), 0);
        assertThat(vitals.problems()).as("back").isEmpty();
    }
}
