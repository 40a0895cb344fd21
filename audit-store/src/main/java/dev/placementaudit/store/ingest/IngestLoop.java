package dev.placementaudit.store.ingest;

import dev.placementaudit.service.ConsumerLoop;
import dev.placementaudit.service.ConsumerVitals;
import dev.placementaudit.service.DaemonThreads;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.service.Outage;
import dev.placementaudit.store.alerts.AlertPublisher;
import dev.placementaudit.store.chain.ChainLog;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.incidents.IncidentLedger;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Consumes decisions and load summaries (read_committed) into the projection. Kafka offsets are not the truth
 * here: on every assignment the consumer seeks to the offsets stored in the database with the rows, so a crash
 * anywhere replays exactly what did not commit. A database outage stalls ingestion (the batch in hand is retried
 * with backoff) and loses nothing; records that cannot be stored go to the dead-letter topic first.
 */
public final class IngestLoop extends ConsumerLoop {
    private static final Logger LOG = LoggerFactory.getLogger(IngestLoop.class);
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(10);
    private static final Duration ALERT_SWEEP = Duration.ofSeconds(5);

    private final List<String> topics;
    private final Duration pollTimeout;
    private final ProjectionWriter writer;
    private final AlertPublisher alerts;
    private final ChainLog chainLog;
    private final IngestListener metrics;
    private final Clock clock;
    /** Rebalances seen (partitions revoked, assigned or lost): a batch in hand from before one is not written. */
    private volatile long rebalances;
    /** Decodes the records polled ahead while the ingest thread writes the batch before them. */
    private final ExecutorService decoder = Executors.newSingleThreadExecutor(DaemonThreads.named("audit-store-decode"));
    /** Until the first batch commits: then one line says how long the start took. Loop thread only. */
    private boolean firstCommit = true;
    /** JVM uptime when partitions were first assigned; -1 before. Loop thread only (rebalance callbacks run in poll). */
    private long firstAssignedAt = -1;
    /** Holds the summaries back while they run far ahead of their decisions; loop thread only. */
    private final SummaryPacing pacing = new SummaryPacing();
    /** The next poll's records, decoding while the batch before them writes; loop thread only. */
    private Future<List<Decoded>> ahead;
    /** The broker or the database away while publishing the alert outbox: said when it starts and when it ends. */
    private final Outage alertOutage = new Outage(LOG, "publishing the alert outbox");
    /** Publishes the alert outbox off the ingest thread: a batch never waits for the broker to acknowledge its alerts. */
    private final ScheduledExecutorService alertSender;
    private final AtomicBoolean alertsQueued = new AtomicBoolean();
    /** Sends each batch's rejects to the dead-letter topic, and counts the load id conflicts among them. */
    private final RejectSender rejects;

    /** Reads the store's topics (decisions, summaries, observations) as its group, the projection its dead letters name. */
    public IngestLoop(Consumer<byte[], byte[]> consumer, Producer<byte[], byte[]> deadLetters, StoreConfig config, ProjectionWriter writer,
                      AlertPublisher alerts, ChainLog chainLog, IngestListener metrics, Clock clock, ConsumerVitals vitals) {
        super("ingest loop", consumer, vitals, LOG);
        this.topics = List.of(config.decisionsTopic(), config.resolvedTopic(), config.observationsTopic());
        this.rejects = new RejectSender(deadLetters, config.deadLetterTopic(), config.groupId().getBytes(StandardCharsets.UTF_8), metrics, clock);
        this.pollTimeout = config.pollTimeout();
        this.writer = writer;
        this.alerts = alerts;
        this.chainLog = chainLog;
        this.metrics = metrics;
        this.clock = clock;
        this.alertSender = alerts == null ? null : Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("audit-store-alert-publisher"));
    }

    @Override
    protected void begin() {
        consumer.subscribe(topics, new SeekToStoredOffsets());
        publishAllChainHeads();
        if (alertSender != null) {
            // Alerts left in the outbox (by this store before it stopped, or by another instance) go out within a sweep.
            alertSender.scheduleWithFixedDelay(this::publishAlerts, 0, ALERT_SWEEP.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /** One batch: polled (or decoded ahead), written with its offsets, while the next poll's records decode. */
    @Override
    protected void step() throws InterruptedException {
        List<Decoded> batch;
        if (ahead != null) {
            batch = decoded(ahead);
            ahead = null;
        } else {
            ConsumerRecords<byte[], byte[]> records = pollAndReport(pollTimeout);
            if (records.isEmpty()) {
                pacing.pace(consumer, List.of()); // nothing came: nothing may wait on decisions that are not coming
                return;
            }
            batch = writer.decode(list(records));
        }
        // Before the next poll: the summaries wait while they are far ahead of the decisions (SummaryPacing).
        long pausedBefore = pacing.pauses();
        pacing.pace(consumer, batch);
        if (pacing.pauses() > pausedBefore) {
            metrics.summariesPaused();
        }
        // The next poll's records are fetched now and decoded on another thread while this batch writes.
        long generation = rebalances;
        ConsumerRecords<byte[], byte[]> next = pollAndReport(Duration.ZERO);
        if (rebalances != generation) {
            resumeFromStoredOffsets("the partitions moved before a batch was written");
            return;
        }
        if (!next.isEmpty()) {
            List<ConsumerRecord<byte[], byte[]>> polled = list(next);
            ahead = decoder.submit(() -> writer.decode(polled));
        }
        ingest(batch);
        if (ahead != null && rebalances != generation) {
            // Partitions moved while the batch was retried: what was polled ahead is dropped and fetched again.
            decoded(ahead);
            ahead = null;
            resumeFromStoredOffsets("the partitions moved while a batch was written");
        }
    }

    @Override
    protected void end() {
        decoder.shutdownNow();
        if (alertSender != null) {
            alertSender.shutdown();
            try {
                alertSender.awaitTermination(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private ConsumerRecords<byte[], byte[]> pollAndReport(Duration timeout) {
        ConsumerRecords<byte[], byte[]> records = poll(timeout);
        metrics.publishDeferred();
        return records;
    }

    private static List<ConsumerRecord<byte[], byte[]>> list(ConsumerRecords<byte[], byte[]> records) {
        List<ConsumerRecord<byte[], byte[]>> list = new ArrayList<>(records.count());
        records.forEach(list::add);
        return list;
    }

    private static List<Decoded> decoded(Future<List<Decoded>> ahead) throws InterruptedException {
        try {
            return ahead.get();
        } catch (ExecutionException e) {
            throw new IllegalStateException("decoding a batch failed", e.getCause());
        }
    }

    /**
     * A batch in hand was not written and the partitions moved: every partition still assigned goes back to the
     * offset stored with the rows (its records come again), as a newly assigned one does.
     */
    private void resumeFromStoredOffsets(String why) {
        LOG.info("{}: resuming {} from the offsets stored with the rows", why, consumer.assignment());
        new SeekToStoredOffsets().onPartitionsAssigned(consumer.assignment());
    }

    private static long uptimeMillis() {
        return ManagementFactory.getRuntimeMXBean().getUptime();
    }

    private void ingest(List<Decoded> batch) throws InterruptedException {
        boolean lettered = false;
        int attempt = 0;
        while (running()) {
            try {
                if (!lettered) {
                    // What names a load it is no part of goes to the dead letters with the rest (issue 56).
                    batch = writer.bind(batch);
                    rejects.send(batch);
                    lettered = true;
                }
                BatchOutcome outcome = writer.write(batch);
                if (state() == State.DATABASE_UNAVAILABLE) {
                    LOG.info("database is back; batch of {} records written after {} attempts", batch.size(), attempt + 1);
                }
                state(State.RUNNING);
                if (firstCommit) {
                    firstCommit = false;
                    // Where a restart's time goes, JVM start included (bench/run.sh restart reads this line).
                    LOG.info("first batch committed {} ms after the JVM started (partitions first assigned at {} ms)", uptimeMillis(),
                            firstAssignedAt);
                }
                metrics.committed(outcome);
                for (String stray : outcome.observationsDetached()) {
                    metrics.deadLettered(DeadLetter.Reason.INVALID_CONTENT.name());
                    LOG.warn("dead-lettered the observation {} as INVALID_CONTENT/{}: it came before its load, which is another deployment's",
                            stray, ObservationRows.DEPLOYMENT_MISMATCH);
                }
                outcome.incidents().forEach(IngestLoop::logIncident);
                if (!outcome.alerts().isEmpty() || !outcome.incidents().isEmpty()) {
                    publishAlertsSoon();
                }
                vitals().progressed();
                if (chainLog != null) {
                    chainLog.publish(outcome.chainHeads());
                }
                return;
            } catch (SQLException e) {
                SQLException outage = e;
                if (SqlFailures.loadIdTaken(e)) {
                    // Another instance stored one of these ids since they were checked: checked again, and what now conflicts
                    // goes to the dead letters too (only what was not sent there already). The same load stored by both (a
                    // record written again after a rebalance) conflicts with nothing: the batch is retried as any 23505 is.
                    try {
                        List<Decoded> rebound = writer.bind(batch);
                        if (rejects.sendNew(batch, rebound) > 0) {
                            LOG.info("another store instance stored one of this batch's load ids meanwhile ({}): the batch checked again",
                                    SqlFailures.message(e));
                            batch = rebound;
                            continue;
                        }
                    } catch (SQLException duringCheck) {
                        outage = duringCheck;
                    }
                }
                if (ProjectionWriter.isContentError(e)) {
                    try {
                        List<Decoded> isolated = setAsideUnstorable(batch, e);
                        if (isolated != batch) {
                            batch = isolated;
                            continue;
                        }
                    } catch (SQLException duringSearch) {
                        outage = duringSearch;
                    }
                }
                attempt++;
                state(State.DATABASE_UNAVAILABLE);
                metrics.ingestFailure();
                long backoff = backoffMillis(attempt, 200, MAX_BACKOFF);
                LOG.warn("writing a batch of {} records failed (attempt {}), retrying in {} ms: {}", batch.size(), attempt, backoff, outage.toString());
                // Keep the group membership alive while waiting: poll nothing new, just heartbeat.
                consumer.pause(consumer.assignment());
                long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(backoff);
                while (running() && System.nanoTime() < until) {
                    consumer.poll(Duration.ofMillis(Math.min(backoff, 200)));
                }
                consumer.resume(consumer.paused());
            }
        }
    }

    /**
     * The database refused the batch as content: find the records it refuses, dead-letter exactly those, and return the
     * batch with them set aside, for the rest to commit with the offsets. The same batch back means none could be
     * singled out (the refusal needs several records together): then it is retried like an outage, never skipped.
     */
    private List<Decoded> setAsideUnstorable(List<Decoded> batch, SQLException refusal) throws SQLException {
        List<Decoded> isolated = writer.isolateUnstorable(batch, refusal);
        List<Decoded> setAside = new ArrayList<>();
        for (int i = 0; i < batch.size(); i++) {
            if (isolated.get(i) != batch.get(i)) {
                setAside.add(isolated.get(i));
            }
        }
        if (setAside.isEmpty()) {
            LOG.warn("the database refused a batch of {} records ({}) but no single record of it: retrying", batch.size(), refusal.toString());
            return batch;
        }
        rejects.send(setAside);
        return isolated;
    }

    /** What {@code /health} warns of: load ids that came again with other content since this instance started. */
    public List<String> warnings() {
        return rejects.warnings();
    }

    /** Every deployment's head once at start: a head committed but not yet published when the store stopped goes out now. */
    private void publishAllChainHeads() {
        if (chainLog == null) {
            return;
        }
        try {
            chainLog.publish(writer.chainHeads());
        } catch (SQLException e) {
            LOG.warn("cannot read the chain heads to publish them: {}", e.toString());
        }
    }

    /** Has the alert publisher drain the outbox as soon as it can: once, however many batches ask meanwhile. */
    private void publishAlertsSoon() {
        if (alertsQueued.compareAndSet(false, true)) {
            try {
                alertSender.execute(() -> {
                    alertsQueued.set(false);
                    publishAlerts();
                });
            } catch (RejectedExecutionException stopping) {
                alertsQueued.set(false);
            }
        }
    }

    /** On the publisher's thread: every pending alert, a page at a time, until a page comes back short or publishing fails. */
    private void publishAlerts() {
        try {
            int published;
            do {
                published = alerts.publishPending();
                metrics.published(published);
            } while (published >= AlertPublisher.PAGE && !alertSender.isShutdown());
            alertOutage.ended();
        } catch (SQLException | RuntimeException e) {
            alertOutage.failed(e + "; retried within " + ALERT_SWEEP.toSeconds() + " s");
        }
    }

    /** Positions every newly assigned partition at the offset the database says comes next. */
    private final class SeekToStoredOffsets implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            rebalances++;
            Map<TopicPartition, Long> stored = null;
            for (int attempt = 1; stored == null && running(); attempt++) {
                try {
                    stored = writer.storedOffsets(partitions);
                } catch (SQLException e) {
                    state(State.DATABASE_UNAVAILABLE);
                    LOG.warn("cannot read stored offsets (attempt {}): {}", attempt, e.toString());
                    pause(backoffMillis(attempt, 200, MAX_BACKOFF));
                }
            }
            if (stored == null) {
                return;
            }
            List<TopicPartition> fresh = new ArrayList<>();
            for (TopicPartition partition : partitions) {
                Long offset = stored.get(partition);
                if (offset == null) {
                    fresh.add(partition);
                } else {
                    consumer.seek(partition, offset);
                }
            }
            if (!fresh.isEmpty()) {
                consumer.seekToBeginning(fresh);
            }
            LOG.info("assigned {}; resuming from stored offsets {}", partitions, stored);
            if (firstAssignedAt < 0 && !partitions.isEmpty()) {
                firstAssignedAt = uptimeMillis();
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            // Nothing this store wrote is in flight (each batch commits in one transaction); a batch in hand or polled
            // ahead is dropped (see run), and whoever gets the partitions resumes from the offsets stored with the rows.
            rebalances++;
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            rebalances++;
        }
    }

    /** One line per incident opened, resolved or reopened: what an operator tailing the log sees of a cause. */
    private static void logIncident(IncidentLedger.Change change) {
        String what = change.before() == null ? "opened" : change.after() == IncidentLedger.State.RESOLVED ? "resolved" : "reopened";
        LOG.info("incident {} {}: {} {} -> {}: {} ({} deployment(s) showing it)", change.incidentId(), what, change.modelId(),
                change.fromRelease(), change.toRelease(), change.cause(), change.showing());
    }
}
