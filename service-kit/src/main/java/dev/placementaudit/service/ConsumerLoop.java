package dev.placementaudit.service;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The lifecycle both consuming services share, written once: started on a thread of its own, it begins (subscribes),
 * then takes {@linkplain #step() steps} until asked to stop or until something fails, and ends by closing what it owns
 * and then its consumer. Its state, failure, assignment and vitals are read from any thread by {@code /health}.
 *
 * <p>What a service does in a step (resolve and produce, or write the projection) is its own; what it shares is here:
 * a {@link #shutdown()} safe from a signal handler (the consumer is woken, and a wakeup nobody asked for is a
 * failure), a {@link #poll} that samples the vitals every time, a close that waits for the step in hand, and one
 * shape of health.
 */
public abstract class ConsumerLoop implements Runnable {
    /** A loop's state. {@code DATABASE_UNAVAILABLE}: a loop that writes to a database is waiting for it to come back. */
    public enum State { STARTING, RUNNING, DATABASE_UNAVAILABLE, STOPPED, FAILED }

    protected final Consumer<byte[], byte[]> consumer;
    private final ConsumerVitals vitals;
    private final Logger log;
    private final String name;
    private volatile boolean running = true;
    private volatile State state = State.STARTING;
    private volatile Throwable failure;
    private volatile Set<TopicPartition> assignment = Set.of();
    private volatile long lastPollNanos = System.nanoTime();
    private volatile Thread thread;

    /** @param name what the logs call the loop, e.g. "ingest loop" */
    protected ConsumerLoop(String name, Consumer<byte[], byte[]> consumer, ConsumerVitals vitals, Logger log) {
        this.name = name;
        this.consumer = consumer;
        this.vitals = vitals;
        this.log = log;
    }

    /** Before the first step, on the loop's thread: subscribe, and whatever else must happen once. */
    protected abstract void begin() throws Exception;

    /** One unit of the loop's work; called again for as long as the loop runs. */
    protected abstract void step() throws Exception;

    /** After the last step, before the consumer closes: close what the loop owns. Never throws. */
    protected void end() {
    }

    /** The loop failed with {@code e} and stops; says so. */
    protected void failed(Throwable e) {
        log.error("{} failed; stopping", name, e);
    }

    @Override
    public final void run() {
        try {
            begin();
            state = State.RUNNING;
            while (running) {
                step();
            }
        } catch (WakeupException e) {
            if (running) {
                failure = e;
            }
        } catch (Throwable e) {
            failure = e;
            failed(e);
        } finally {
            end();
            try {
                consumer.close();
            } catch (RuntimeException e) {
                log.warn("closing the consumer failed: {}", e.toString());
            }
            state = failure == null ? State.STOPPED : State.FAILED;
        }
    }

    /** Runs the loop on a thread of its own, named {@code threadName}. */
    public final void start(String threadName) {
        Thread t = new Thread(this, threadName);
        thread = t;
        t.start();
    }

    /** Polls, and samples what the consumer says of its progress (assignment, connection, heartbeat, lag). */
    protected final ConsumerRecords<byte[], byte[]> poll(Duration timeout) {
        ConsumerRecords<byte[], byte[]> records = consumer.poll(timeout);
        lastPollNanos = System.nanoTime();
        assignment = Set.copyOf(consumer.assignment());
        vitals.sample(consumer);
        return records;
    }

    /** Asks the loop to stop after the step in hand; safe from any thread (a SIGTERM hook). */
    public void shutdown() {
        running = false;
        consumer.wakeup();
    }

    /** Blocks until the loop's thread ends (shutdown or failure); true if it has. */
    public final boolean awaitTermination(Duration timeout) throws InterruptedException {
        Thread t = thread;
        if (t != null) {
            t.join(timeout.toMillis());
            return !t.isAlive();
        }
        return state == State.STOPPED || state == State.FAILED;
    }

    /** Asks the loop to stop and waits up to {@code grace} for the step in hand to finish. */
    public final void stop(Duration grace) {
        shutdown();
        try {
            if (!awaitTermination(grace)) {
                log.warn("{} did not stop within {} s", name, grace.toSeconds());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    protected final boolean running() {
        return running;
    }

    /** The loop ends after this step, as if asked to (an interrupt while it waited). */
    protected final void stopRunning() {
        running = false;
    }

    /** Exponential back-off: {@code first} doubled per attempt (up to 64 times), never more than {@code max}. */
    protected static long backoffMillis(int attempt, long first, Duration max) {
        return Math.min(max.toMillis(), first << Math.min(attempt, 6));
    }

    /** Waits; an interrupt ends the loop after this step, as a shutdown would. */
    protected final void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopRunning();
        }
    }

    protected final void state(State state) {
        this.state = state;
    }

    public final State state() {
        return state;
    }

    public final Throwable failure() {
        return failure;
    }

    public final Set<TopicPartition> assignment() {
        return assignment;
    }

    /** What the loop's consumer says about its progress, for {@code /health}. */
    public final ConsumerVitals vitals() {
        return vitals;
    }

    public final Duration sinceLastPoll() {
        return Duration.ofNanos(System.nanoTime() - lastPollNanos);
    }

    /**
     * Up only while the loop runs and nothing has been wrong past the vitals' bound (the broker out of reach, no
     * partition assigned, records waiting with nothing committed) nor among {@code more}, the service's own problems.
     * Each problem is named.
     *
     * @param identity details that say which instance this is, shown after the state
     */
    public final Health health(Map<String, Object> identity, List<String> more) {
        return health(identity, more, List.of());
    }

    /**
     * @param warnings what an operator should know that does not make the service DOWN (records set aside as
     *                 conflicts, say): shown under {@code warnings}
     */
    public final Health health(Map<String, Object> identity, List<String> more, List<String> warnings) {
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("state", state.name());
        details.putAll(identity);
        details.put("assignedPartitions", assignment.stream().map(TopicPartition::toString).sorted().toList());
        details.put("sinceLastPollMs", sinceLastPoll().toMillis());
        List<String> problems = new ArrayList<>(vitals.problems());
        problems.addAll(more);
        if (!problems.isEmpty()) {
            details.put("problems", problems);
        }
        if (!warnings.isEmpty()) {
            details.put("warnings", List.copyOf(warnings));
        }
        Throwable failed = failure;
        if (failed != null) {
            details.put("failure", failed.toString());
        }
        return new Health(state == State.RUNNING && problems.isEmpty(), details);
    }
}
