package dev.placementaudit.worker.pipeline;

import org.apache.kafka.common.KafkaException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Looks again, on a thread of its own, for transactions of the worker's producers left hanging on a partition it writes
 * ({@link HangingTransactions#sweep}), every half transaction timeout (5 s at least), for as long as the worker runs.
 * The look the loop makes when it makes a producer anew runs once, right after the outage; a transaction left open
 * where it did not see it would stop read_committed readers of that partition for good. A failed sweep (the broker away)
 * is logged and tried again at the next one; the loop never waits for a sweep.
 */
final class HangingSweep implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HangingSweep.class);
    /** Over the coordinator's own abort of a transaction that outlived its timeout, which it looks for every 10 s by default. */
    static final Duration MARGIN = Duration.ofSeconds(20);

    private final List<HangingTransactions> producers;
    private final WorkerMetrics metrics;
    private final Clock clock;
    private final Duration minAge;
    private final Duration period;
    private ScheduledExecutorService scheduler;

    HangingSweep(List<HangingTransactions> producers, WorkerMetrics metrics, Clock clock, Duration transactionTimeout) {
        this.producers = List.copyOf(producers);
        this.metrics = metrics;
        this.clock = clock;
        this.minAge = transactionTimeout.plus(MARGIN);
        Duration half = transactionTimeout.dividedBy(2);
        this.period = half.compareTo(Duration.ofSeconds(5)) < 0 ? Duration.ofSeconds(5) : half;
    }

    /** How long a transaction must have been seen open before a sweep aborts it. */
    Duration minAge() {
        return minAge;
    }

    Duration period() {
        return period;
    }

    void start(String name) {
        scheduler = Executors.newSingleThreadScheduledExecutor(task -> {
            Thread thread = new Thread(task, name);
            thread.setDaemon(true);
            return thread;
        });
        scheduler.scheduleWithFixedDelay(this::sweepOnce, period.toMillis(), period.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** One sweep of every producer's partitions; returns how many transactions it aborted. */
    int sweepOnce() {
        int aborted = 0;
        for (HangingTransactions producer : producers) {
            try {
                aborted += producer.sweep(clock.instant(), minAge);
            } catch (KafkaException e) {
                LOG.debug("looking for transactions left hanging failed ({}); trying again in {} s", e.toString(), period.toSeconds());
            } catch (RuntimeException e) {
                LOG.warn("looking for transactions left hanging failed; trying again in {} s", period.toSeconds(), e);
            }
        }
        if (aborted > 0) {
            metrics.hangingAborted(aborted);
        }
        return aborted;
    }

    /** Stops the sweeps, before the admin client they use is closed. */
    @Override
    public void close() {
        if (scheduler != null) {
            scheduler.shutdownNow();
        }
    }
}
