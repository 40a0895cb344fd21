package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.service.ConsumerLoop;
import dev.placementaudit.service.ConsumerVitals;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.pipeline.Transactions.OpenTransaction;
import dev.placementaudit.worker.pipeline.Transactions.Outcome;
import dev.placementaudit.worker.pipeline.WorkerMetrics.Phase;
import io.micrometer.core.instrument.Timer;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Collection;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Supplier;

/**
 * consume → resolve → produce, exactly once (Kafka EOS v2): each poll's records become one transaction holding
 * every AllocationDecided, every LoadResolved, every dead letter and the consumer offsets, committed with the
 * group's metadata so a zombie from an older generation is fenced. A crash at any point leaves either all of a
 * batch visible to read_committed consumers or none of it; the batch is then redone from the committed offsets,
 * with the same decision ids.
 *
 * <p>Batches are pipelined: once a batch's outputs are sent, the loop polls without blocking for up to
 * {@code worker.batches.ahead} (1) more batches and starts preparing them, then commits, so the preparing threads
 * work while the commit waits on the transaction coordinator's round trips; with 2 or more, they also have the
 * next batch while this one's outputs are sent (the Kafka client compresses them on the loop thread). Polling while a
 * transaction is open is what Kafka Streams does too, and it needs the same care: a rebalance inside that poll
 * commits the open transaction before the partitions move (or aborts it when they are lost) and drops the batches
 * ahead's records of the partitions that leave, which their next owner reads again from the committed offsets; a
 * failed commit discards every batch ahead, which is pure work, and rewinds to the committed offsets. What a
 * transaction holds is unchanged: one poll's records.
 *
 * <p>Commits overlap the next batch's sends ({@code worker.commit.overlap}, on by default): two transactional
 * producers, each with its own id, take turns. Once a batch's records are all written on the broker (a flush, so
 * that every partition keeps its records in input order), its offsets and end of transaction go to a committing
 * thread while the loop sends the next batch on the other producer; that batch's commit waits until the previous one
 * committed, so a later batch never commits without the earlier one. A failed commit aborts the batch sent meanwhile
 * too, and both are redone from the committed offsets; a rebalance waits for the commit in flight before it settles
 * the open transaction; with no more input, the idle poll waits for it, so a failure is redone at once.
 *
 * <p>Nothing stalls a partition: undecodable and invalid loads go to the dead-letter topic inside the same
 * transaction; if a whole batch keeps failing to commit for a reason that is not a rebalance, the next attempt
 * runs one record per transaction and dead-letters the one record whose outputs cannot be produced.
 *
 * <p>Nothing wedges it either: a broker outage leaves a transactional producer in a state it cannot leave (a fatal
 * error, any call of a transaction that timed out, an epoch the coordinator bumped when it aborted a transaction that
 * outlived its timeout). After a timeout the client never aborts: what the transaction holds is then the broker's to
 * settle (see {@link TransactionalProducer}). The loop then closes that producer, builds a new one with the same
 * transactional id (whose {@code initTransactions} aborts whatever the old one left open, retried until the broker
 * answers), aborts what an older incarnation left open where the coordinator no longer knows of it
 * ({@link HangingTransactions}), keeps the consumer and its group membership, and redoes from the committed offsets,
 * except where an outage split a transaction: what it aborted on an output of a transaction it saw commit is redone
 * from where that began, and offsets lost by one it can prove committed (its records read read_committed on every
 * partition it wrote, {@link CommitWitness}) are put back (see {@link #provenAhead} and {@link #redoBehind}).
 * Only real fencing stops it: the consumer's static membership taken by another process
 * ({@link FencedInstanceIdException}), or the producer fenced again before any transaction of its new incarnation
 * committed (another live instance keeps taking the id). An outage makes both producers anew, once the commit in
 * flight has ended.
 */
public final class ResolverLoop extends ConsumerLoop {
    private static final Logger LOG = LoggerFactory.getLogger(ResolverLoop.class);
    /**
     * How every warning of a commit redone because it could not be proven begins, once per
     * {@code pa_worker_commits_unproven_total}: the one case where loads may appear twice on the worker's topics
     * (docs/guarantees.md). Something to search a worker's log for; the chaos soak does.
     */
    static final String NOT_PROVEN = "commit not proven: ";
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(5);
    /** How many of the last commits per input partition are kept as evidence: the one in flight, the one before, and margin. */
    private static final int EVIDENCE = 4;

    private final WorkerConfig config;
    /**
     * Made at start, and again whenever an outage has left one unusable: one, or two used in turn, each with its own
     * transactional id, so that a batch commits while the next batch's outputs are sent.
     */
    private final List<TransactionalProducer> producers = new ArrayList<>();
    /** Asked, each time the producer of the same index is made, to abort what its older incarnations left open. */
    private final List<LeftOpen> hanging = new ArrayList<>();
    private final WorkerMetrics metrics;
    private final Clock clock;
    private final LoadResolution resolution;
    private final RecordPreparation preparation;
    /** Commits a batch handed over by the loop while the loop sends the next one; null with one producer. */
    private ExecutorService committer;
    /** Which producer the next transaction is on. */
    private int turn;
    /** The previous batch's commit, running on the committing thread; only ever touched on the loop thread. */
    private Future<?> committing;
    /**
     * Evidence for the next outage, per input partition it owns (written on the loop or the committing thread, forgotten
     * at each recovery and rewind): its last {@link #EVIDENCE} transactions seen to commit or timed out, oldest first
     * (see {@link #provenAhead} and {@link #redoBehind}).
     */
    private final Map<TopicPartition, List<SeenCommit>> committedHere = new ConcurrentHashMap<>();
    /** Reads a transaction's records read_committed on every partition it wrote: the proof that it committed. */
    private final CommitWitness witness;
    /** Fenced, and nothing committed since the producers were made anew: a second fencing now means another instance. */
    private volatile boolean fencedSinceCommit;
    /** A commit that failed while a rebalance waited for it in the regular poll, handled once that poll returns. */
    private KafkaException commitFailure;

    private boolean isolateNextBatch;
    private int consecutiveFailures;
    /** Why the producer is being made anew, while it is; null otherwise (shown by {@code /health}). */
    private volatile String recovering;
    /** The batch whose outputs are sent but not yet committed; only ever touched on the loop thread. */
    private OpenTransaction open;
    /** Polled, being prepared, nothing sent yet, oldest first; only ever touched on the loop thread. */
    private final Deque<Batch> ahead = new ArrayDeque<>();
    /** A look-ahead poll's failure, raised once the open transaction has committed. */
    private KafkaException pollFailure;
    /** The input partitions assigned to this loop now, as the reconciler asks from its own thread. */
    private final Set<Integer> owned = ConcurrentHashMap.newKeySet();

    /** A loop with one transactional producer: each batch commits before the next one's outputs are sent. */
    public ResolverLoop(WorkerConfig config, Consumer<byte[], byte[]> consumer, Supplier<Producer<byte[], byte[]>> producers,
                        WorkerMetrics metrics, LoadResolution resolution, Clock clock) {
        this(config, consumer, List.of(producers), List.of(LeftOpen.NONE), CommitWitness.NONE, metrics, resolution, clock);
    }

    /**
     * @param producers one supplier per transactional id: with two, a batch commits on one producer while the next
     *                  batch's outputs are sent on the other
     * @param hanging   per producer, asked each time it is made to abort what an older incarnation left open
     * @param witness   proves, after an outage, that a transaction the worker saw commit did commit
     */
    ResolverLoop(WorkerConfig config, Consumer<byte[], byte[]> consumer, List<Supplier<Producer<byte[], byte[]>>> producers,
                 List<LeftOpen> hanging, CommitWitness witness, WorkerMetrics metrics, LoadResolution resolution, Clock clock) {
        super("resolver loop", consumer, new ConsumerVitals(config.healthBound(), clock), LOG);
        if (producers.isEmpty() || producers.size() > 2 || hanging.size() != producers.size()) {
            throw new IllegalArgumentException("one or two producers, each with what finds its transactions left open");
        }
        this.config = config;
        producers.forEach(factory -> this.producers.add(new TransactionalProducer(factory)));
        this.hanging.addAll(hanging);
        this.metrics = metrics;
        this.clock = clock;
        this.resolution = resolution;
        this.preparation = new RecordPreparation(config, resolution, clock);
        this.witness = witness;
    }

    /** The input partitions this loop owns now: the reconciler looks after these only. */
    public Set<Integer> owned() {
        return Set.copyOf(owned);
    }

    @Override
    protected void begin() {
        producers.get(0).make();
        if (producers.size() == 2) {
            try {
                producers.get(1).make();
            } catch (AuthorizationException e) {
                // An upgrade must not stop a worker whose rights name its one transactional id only.
                LOG.warn("the second transactional producer cannot be made ({}): committing one batch at a time, as before; grant this "
                        + "principal Write on the second transactional id (or a prefix of both), or set worker.commit.overlap=false", e.getMessage());
                producers.get(1).close(Duration.ZERO);
                producers.remove(1);
                hanging.remove(1);
            }
        }
        if (producers.size() == 2) {
            committer = Executors.newSingleThreadExecutor(task -> {
                Thread thread = new Thread(task, Thread.currentThread().getName() + "-committer");
                thread.setDaemon(true);
                return thread;
            });
        }
        // A transaction an earlier run left open on the group's offsets would keep the consumer from ever learning where
        // to start: a failure to look is retried a few times before going on.
        for (int attempt = 1; attempt <= 3; attempt++) {
            try {
                abortLeftOpen();
                break;
            } catch (KafkaException e) {
                LOG.warn("looking for transactions an earlier run left open failed (attempt {} of 3): {}", attempt, e.toString());
                pause(backoffMillis(attempt, 100, MAX_BACKOFF));
            }
        }
        consumer.subscribe(List.of(config.inputTopic()), new Rebalances());
    }

    @Override
    protected void step() {
        try {
            batchStep();
        } catch (ProducerFencedException | InvalidProducerEpochException | OutOfOrderSequenceException | TransactionalProducer.Unusable e) {
            recover(e);
        }
    }

    @Override
    protected void failed(Throwable e) {
        if (e instanceof ProducerFencedException || e instanceof FencedInstanceIdException) {
            LOG.error("fenced: another live worker now owns {} {}; stopping this one",
                    e instanceof FencedInstanceIdException ? "group instance id" : "transactional id",
                    e instanceof FencedInstanceIdException ? config.instanceId() : config.transactionalId(), e);
        } else {
            super.failed(e);
        }
    }

    /** One batch: polled (or taken from those ahead), turned into one transaction (or one per record), committed. */
    private void batchStep() {
        Batch batch = ahead.isEmpty() ? poll(config.pollTimeout(), !isolateNextBatch) : ahead.removeFirst();
        KafkaException commitFailed = commitFailure;
        commitFailure = null;
        if (commitFailed == null && batch.isEmpty()) {
            // Nothing to send meanwhile: the previous batch's commit is waited for, so that its failure is not left
            // unnoticed until more input comes.
            commitFailed = awaitCommit();
        }
        if (commitFailed != null) {
            batch.cancel();
            afterFailedCommit(commitFailed);
            return;
        }
        if (batch.isEmpty()) {
            return;
        }
        boolean committed = isolateNextBatch ? processOneByOne(batch.records()) : processBatch(batch);
        isolateNextBatch = !committed && isolateNextBatch;
        backOffAfter(committed);
        if (pollFailure != null) {
            KafkaException failed = pollFailure;
            pollFailure = null;
            throw failed;
        }
    }

    /**
     * The producer cannot go on: it is closed and made anew with the same transactional id, whose
     * {@code initTransactions} bumps the epoch and aborts what the old one left open, retried with back-off for as
     * long as the broker is away. Every batch ahead is dropped and the consumer, still a member of its group, is
     * rewound to the committed offsets: what was sent and not committed is redone, with the same decision ids.
     *
     * @throws ProducerFencedException when fenced again before anything committed since the last recovery: another live
     *                                 instance owns the transactional id
     */
    private void recover(KafkaException cause) {
        if (cause instanceof ProducerFencedException fenced) {
            if (fencedSinceCommit) {
                throw fenced;
            }
            fencedSinceCommit = true;
        }
        recovering = cause.toString();
        LOG.warn("the transactional producer cannot go on ({}); making it anew and redoing from the committed offsets", Failures.rootCause(cause));
        metrics.producerRecreated();
        open = null;
        ahead.forEach(Batch::cancel);
        ahead.clear();
        isolateNextBatch = false;
        // Only once the commit in flight has ended are the committed offsets those to redo from; if it failed too, the
        // new producers redo its batch as well.
        awaitCommit();
        commitFailure = null;
        turn = 0;
        int attempt = 0;
        while (running()) {
            try {
                for (TransactionalProducer producer : producers) {
                    producer.make();
                }
                List<LeftOpen.Aborted> aborted = abortLeftOpen();
                boolean outputsAborted = aborted.stream().anyMatch(one -> !one.onOffsetsPartition());
                Map<TopicPartition, OffsetAndMetadata> putBack = Offsets.seekToCommitted(consumer,
                        committed -> outputsAborted ? Map.of() : provenAhead(committed));
                redoBehind(aborted);
                // What this worker saw commit before now proves nothing at the next outage: the group's offsets are
                // settled from here, and a commit seen before may since have been aborted whole (see provenAhead).
                committedHere.clear();
                recommit(putBack);
                LOG.info("transactional producer made anew after {} attempt(s); resuming from the committed offsets", attempt + 1);
                recovering = null;
                return;
            } catch (WakeupException e) {
                throw e;
            } catch (KafkaException e) {
                attempt++;
                LOG.warn("making the transactional producer anew failed (attempt {}): {}; retrying", attempt, e.toString());
                pause(backoffMillis(attempt, 100, MAX_BACKOFF));
            }
        }
    }

    /** After the producer is made: what older incarnations left open is aborted before this one writes. */
    private List<LeftOpen.Aborted> abortLeftOpen() {
        List<LeftOpen.Aborted> all = new ArrayList<>();
        for (LeftOpen leftOpen : hanging) {
            List<LeftOpen.Aborted> aborted = leftOpen.abortLeftOpen();
            if (!aborted.isEmpty()) {
                metrics.hangingAborted(aborted.size());
            }
            all.addAll(aborted);
        }
        return all;
    }

    /**
     * The look aborted, on an output partition, the records of a transaction this worker saw commit (or whose end timed
     * out): if it had committed, its offsets are in the group's and its records there are gone, and nothing would ever
     * redo them. Its loads are redone from where it began, behind the group's offsets if need be: a load twice rather
     * than none. A broker-outage run lost loads this way (an output's part left open, its offsets committed). A
     * transaction aborted on an output that this worker has no record of (older than the evidence it keeps) cannot be
     * redone: that is said, with where.
     */
    private void redoBehind(List<LeftOpen.Aborted> aborted) {
        Map<TopicPartition, Long> redo = new HashMap<>();
        for (LeftOpen.Aborted one : aborted) {
            if (one.onOffsetsPartition()) {
                continue;
            }
            boolean known = false;
            for (Map.Entry<TopicPartition, List<SeenCommit>> input : committedHere.entrySet()) {
                for (SeenCommit seen : input.getValue()) {
                    Long first = seen.firstRecords().get(one.partition());
                    if (first != null && first == one.startOffset()) {
                        redo.merge(input.getKey(), seen.from(), Math::min);
                        known = true;
                    }
                }
            }
            if (!known) {
                LOG.warn("a transaction left open on {} from offset {} was aborted, and this worker has no record of it: if it had committed "
                        + "elsewhere, its loads' records on that partition are gone", one.partition(), one.startOffset());
            }
        }
        redo.forEach((partition, from) -> {
            if (consumer.assignment().contains(partition) && from < consumer.position(partition)) {
                metrics.commitUnproven();
                LOG.warn(NOT_PROVEN + "a transaction this worker saw commit or time out had its records on an output aborted as left open: redoing {} from {}, "
                        + "behind the group's offset ({}), so loads of it that did commit elsewhere are resolved twice", partition, from,
                        consumer.position(partition));
                consumer.seek(partition, from);
            }
        });
    }

    /**
     * Where the group's committed offsets are behind what this worker saw commit, the offsets to resume from instead:
     * those whose transaction's records are visible read_committed on every partition it wrote (the first of each).
     * Seeing a commit succeed is not enough: an outage brought back a transaction the worker had seen commit with no
     * marker anywhere, which the look for transactions left open then aborted whole, and another committed on one
     * output and aborted on another; resuming after either loses loads (the broker-outage test, twice, before this proof
     * was asked for). A partition whose commit cannot be proven is redone from the group's offsets.
     */
    private Map<TopicPartition, OffsetAndMetadata> provenAhead(Map<TopicPartition, OffsetAndMetadata> committed) {
        Map<TopicPartition, OffsetAndMetadata> ahead = new HashMap<>();
        // One question per transaction: its partitions of the input share the one map of its records.
        Map<Map<TopicPartition, Long>, Boolean> proven = new IdentityHashMap<>();
        committedHere.forEach((partition, seen) -> {
            if (!committed.containsKey(partition) || seen.isEmpty()) {
                return;
            }
            OffsetAndMetadata group = committed.get(partition);
            long start = group != null ? group.offset() : consumer.beginningOffsets(List.of(partition)).get(partition);
            if (start >= seen.get(seen.size() - 1).offset().offset()) {
                return;
            }
            // From where the group stands, each transaction in turn that begins where the last one ended, while each is
            // proven: a transaction between that nothing proves ends it.
            long at = start;
            OffsetAndMetadata to = null;
            for (SeenCommit next = startingAt(seen, at); next != null; next = startingAt(seen, at)) {
                if (!proven.computeIfAbsent(next.firstRecords(), witness::visible)) {
                    if (!next.seen()) {
                        LOG.info("the group's committed offset of {} ({}) is behind a transaction whose end timed out ({} to {}); it did not "
                                + "commit everywhere: redoing from {}", partition, start, next.from(), next.offset().offset(), at);
                        break;
                    }
                    metrics.commitUnproven();
                    LOG.warn(NOT_PROVEN + "the group's committed offset of {} ({}) is behind a transaction this worker saw commit ({} to {}), "
                            + "whose records ({}: the first of each partition it wrote) are not all visible read_committed: it did not commit "
                            + "everywhere; redoing from {}, so loads of it that did commit somewhere are resolved twice", partition, start, next.from(),
                            next.offset().offset(), next.firstRecords(), at);
                    break;
                }
                at = next.offset().offset();
                to = next.offset();
            }
            if (to != null) {
                ahead.put(partition, to);
            } else if (startingAt(seen, start) == null && seen.stream().anyMatch(SeenCommit::seen)) {
                metrics.commitUnproven();
                LOG.warn(NOT_PROVEN + "the group's committed offset of {} ({}) is behind what this worker saw commit ({}), with a transaction between that "
                        + "nothing proves: redoing from the group's offset, so loads of it that did commit are resolved twice", partition, start, seen.get(seen.size() - 1).offset().offset());
            }
        });
        return ahead;
    }

    private static SeenCommit startingAt(List<SeenCommit> seen, long offset) {
        for (SeenCommit one : seen) {
            if (one.from() == offset) {
                return one;
            }
        }
        return null;
    }

    /**
     * A commit succeeded, or timed out (it may have committed): its offsets, and where the first record of each partition
     * it wrote landed, are kept per input partition, for the next outage to prove it by. A transaction with no record,
     * or whose records were not all written, has nothing to prove it by.
     */
    private void noteCommitted(Map<TopicPartition, OffsetAndMetadata> offsets, Outcome outcome, boolean seen) {
        Map<TopicPartition, Long> firstRecords = new HashMap<>();
        for (Future<RecordMetadata> witness : outcome.witnesses) {
            if (!witness.isDone()) {
                return;
            }
            RecordMetadata written;
            try {
                written = witness.get();
            } catch (ExecutionException e) {
                return;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            firstRecords.merge(new TopicPartition(written.topic(), written.partition()), written.offset(), Math::min);
        }
        if (firstRecords.isEmpty()) {
            return;
        }
        Map<TopicPartition, Long> proof = Map.copyOf(firstRecords);
        offsets.forEach((partition, offset) -> {
            Long from = outcome.from.get(partition);
            if (from != null) {
                SeenCommit one = new SeenCommit(from, offset, proof, seen);
                committedHere.merge(partition, List.of(one), (kept, added) -> {
                    List<SeenCommit> last = new ArrayList<>(kept.subList(Math.max(0, kept.size() - EVIDENCE + 1), kept.size()));
                    last.add(one);
                    return List.copyOf(last);
                });
            }
        });
    }

    /**
     * A commit this worker saw succeed ({@code seen}), or whose end timed out: the input offsets it covered (from its
     * first record to the offset it committed), and the first record of each partition it wrote.
     */
    record SeenCommit(long from, OffsetAndMetadata offset, Map<TopicPartition, Long> firstRecords, boolean seen) {
    }

    /**
     * The group's committed offsets were behind what this worker saw commit, no output partition had a transaction left
     * open, and the transaction's records are visible read_committed on every partition it wrote: the outage lost only
     * the offsets' part of a committed transaction (its outputs have their commit markers), which the abort of what was
     * left open took away. The loop resumes after what committed, instead of resolving those loads a second time, and
     * commits those offsets again in a transaction of their own, so that a worker starting after a crash does not go
     * back either; if that fails, the next batch's commit moves them on. Where an output partition's part was aborted
     * too, nothing is put back ({@code seekToCommitted} is given nothing of its own) and {@link #redoBehind} decides.
     */
    private void recommit(Map<TopicPartition, OffsetAndMetadata> behind) {
        if (behind.isEmpty()) {
            return;
        }
        LOG.warn("the group's committed offsets are behind what this worker saw commit, on {}, and only the offsets partition had a transaction "
                + "left open: an outage lost that part of a committed transaction; resuming after what committed, not resolving those loads "
                + "again, and committing those offsets again", behind);
        metrics.offsetsRecommitted();
        TransactionalProducer producer = producer();
        try {
            producer.begin();
            producer.commit(behind, consumer.groupMetadata());
        } catch (KafkaException e) {
            LOG.warn("committing the offsets again failed ({}); the next batch's commit moves them on", e.toString());
            try {
                producer.abortQuietly();
            } catch (KafkaException unusable) {
                LOG.debug("the producer is made anew by the next batch: {}", unusable.toString());
            }
        }
    }

    /** The producer of the next transaction, or of the one open. */
    private TransactionalProducer producer() {
        return producers.get(turn);
    }

    /** Why the producer is being made anew right now, or null: the loop is recovering from a broker outage. */
    public String recovering() {
        return recovering;
    }

    /**
     * One transaction for the batch. Returns whether it committed, or, with two producers, whether it was handed to the
     * committing thread after the previous batch's commit succeeded; when it was aborted instead, the batches ahead
     * are dropped and the consumer is rewound to the committed offsets.
     */
    private boolean processBatch(Batch batch) {
        Timer.Sample sample = Timer.start();
        try {
            producer().begin();
            open = new OpenTransaction(Offsets.nextOffsets(batch.records()), new Outcome(Offsets.firstOffsets(batch.records())));
            long resolving = 0;
            long sending = 0;
            for (Future<Prepared> one : batch.prepared()) {
                long asked = System.nanoTime();
                Prepared prepared = RecordPreparation.await(one);
                long ready = System.nanoTime();
                send(prepared, open.outcome);
                resolving += ready - asked;
                sending += System.nanoTime() - ready;
            }
            metrics.phase(Phase.RESOLVING, resolving);
            metrics.phase(Phase.SENDING, sending);
            long polling = System.nanoTime();
            lookAhead();
            long committing = System.nanoTime();
            metrics.phase(Phase.POLLING, committing - polling);
            if (open != null && committer == null) {
                commit(open.offsets, open.outcome);
                open = null;
                sample.stop(metrics.batchTimer());
            } else if (open != null) {
                handOver(open, sample);
                open = null;
            }
            metrics.phase(Phase.COMMITTING, System.nanoTime() - committing);
            return true;
        } catch (KafkaException e) {
            if (passesThrough(e)) {
                throw e;
            }
            open = null;
            abortAndRewind(e);
            // A rebalance is not the batch's fault; anything else might be one record's, so isolate it next time.
            isolateNextBatch = !Failures.isGroupChange(e);
            return false;
        }
    }

    /**
     * With two producers: once the previous batch's commit has succeeded and every record of this one is written on the
     * broker, this batch's commit goes to the committing thread and the next batch is sent on the other producer. The
     * flush keeps each partition's records in input order across the two producers (the store orders a deployment's
     * loads by their place in the log); what runs beside the next batch's sends is the commit itself: the offsets and
     * the end of the transaction, whose markers the coordinator writes before this producer can begin another one.
     *
     * @throws KafkaException the previous batch's commit failure: this batch is then aborted and both are redone
     */
    private void handOver(OpenTransaction transaction, Timer.Sample sample) {
        KafkaException previous = awaitCommit();
        if (previous != null) {
            throw previous;
        }
        TransactionalProducer producer = producer();
        producer.flush();
        ConsumerGroupMetadata group = consumer.groupMetadata();
        committing = committer.submit(() -> commitHandedOver(producer, transaction, group, sample));
        turn = (turn + 1) % producers.size();
    }

    /**
     * On the committing thread. A commit that fails for a reason the producer survives is aborted here, so the producer
     * is free for its next turn; the loop learns of the failure when it waits for this commit, and redoes the batch.
     */
    private void commitHandedOver(TransactionalProducer producer, OpenTransaction transaction, ConsumerGroupMetadata group, Timer.Sample sample) {
        try {
            commit(producer, transaction.offsets, group, transaction.outcome);
        } catch (KafkaException e) {
            if (!passesThrough(e)) {
                producer.abortQuietly();
                metrics.aborted();
            }
            throw e;
        }
        sample.stop(metrics.batchTimer());
    }

    /**
     * The errors that no abort answers, let through by every transaction's catch: the producer is made anew
     * ({@link #step}), or the loop stops.
     */
    private static boolean passesThrough(KafkaException e) {
        return e instanceof ProducerFencedException || e instanceof InvalidProducerEpochException || e instanceof OutOfOrderSequenceException
                || e instanceof AuthorizationException || e instanceof FencedInstanceIdException || e instanceof TransactionalProducer.Unusable;
    }

    /**
     * Waits for the commit handed to the committing thread, if any, and returns its failure, or null when it committed
     * or there was none. Bounded by the producer's own timeouts, as a commit on the loop thread is.
     */
    private KafkaException awaitCommit() {
        if (committing == null) {
            return null;
        }
        Future<?> done = committing;
        committing = null;
        try {
            done.get();
            return null;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof KafkaException failure) {
                return failure;
            }
            return new KafkaException("committing a batch failed", e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new InterruptException(e);
        }
    }

    /**
     * The previous batch's commit failed after the loop had gone on (nothing of a later batch is open): as for a failed
     * commit on the loop thread, every batch ahead is dropped and the consumer rewound, or, when the producer cannot go
     * on, it is made anew.
     */
    private void afterFailedCommit(KafkaException failed) {
        if (passesThrough(failed)) {
            throw failed;
        }
        LOG.warn("the previous batch's commit failed; redoing from the committed offsets: {}", failed.toString());
        rewind();
        isolateNextBatch = !Failures.isGroupChange(failed);
        backOffAfter(false);
    }

    /**
     * Polls without blocking while the open transaction waits to commit, until the configured number of batches are
     * ahead or nothing more has been fetched, and starts preparing what came back. A rebalance in these polls settles the
     * open transaction in {@link Rebalances}; if that commit failed, its error is rethrown here so the batch takes
     * the abort-and-rewind path. A shutdown request ends the look-ahead but not the open transaction, which still
     * commits. Any other poll failure is kept for after the commit, where it ends the loop just as it would have
     * from the next regular poll.
     */
    private void lookAhead() {
        try {
            while (ahead.size() < config.batchesAhead() && running()) {
                Batch more = poll(Duration.ZERO, true);
                if (more.isEmpty()) {
                    break;
                }
                ahead.addLast(more);
            }
        } catch (WakeupException e) {
            if (running()) {
                throw e;
            }
        } catch (KafkaException e) {
            pollFailure = e;
        }
        if (open != null && open.failure != null) {
            throw open.failure;
        }
        if (commitFailure != null) {
            KafkaException failed = commitFailure;
            commitFailure = null;
            throw failed;
        }
    }

    private Batch poll(Duration timeout, boolean prepare) {
        ConsumerRecords<byte[], byte[]> polled = poll(timeout);
        metrics.lag((long) vitals().lag());
        if (polled.isEmpty()) {
            return Batch.NONE;
        }
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>(polled.count());
        polled.forEach(records::add);
        return new Batch(records, prepare ? preparation.prepareAll(records) : List.of());
    }

    /**
     * After a rebalance: records of partitions this worker no longer owns leave the batches ahead, unsent. Their
     * next owner, or this worker if they come back, reads them again from the committed offset.
     */
    private void dropAhead(Collection<TopicPartition> leaving) {
        int before = ahead.size();
        for (int i = 0; i < before; i++) {
            Batch kept = ahead.removeFirst().without(leaving);
            if (!kept.isEmpty()) {
                ahead.addLast(kept);
            }
        }
    }

    /**
     * Drops every batch ahead, unsent, and seeks back to the committed offsets, once the commit in flight, if any, has
     * ended: until then they may still move.
     */
    private void rewind() {
        ahead.forEach(Batch::cancel);
        ahead.clear();
        awaitCommit();
        Offsets.seekToCommitted(consumer, committed -> Map.of());
        committedHere.clear();
    }

    /** One transaction per record; the record whose outputs cannot be produced is dead-lettered on its own. */
    private boolean processOneByOne(List<ConsumerRecord<byte[], byte[]>> records) {
        // Nothing is in flight: isolation follows a rewind, which waited for the commit in flight.
        LOG.warn("isolating {} records after a failed transaction", records.size());
        for (ConsumerRecord<byte[], byte[]> record : records) {
            KafkaException failed = tryAlone(record);
            if (failed == null) {
                continue;
            }
            if (Failures.isGroupChange(failed) || tryAlone(record) == null) {
                return false;
            }
            try {
                Outcome outcome = new Outcome(Offsets.firstOffsets(List.of(record)));
                producer().begin();
                deadLetter(record, DeadLetter.Reason.PRODUCE_FAILED, Failures.rootName(failed), null, Failures.causeChain(failed), outcome);
                commit(Map.of(Offsets.partition(record), new OffsetAndMetadata(record.offset() + 1)), outcome);
            } catch (KafkaException e) {
                if (passesThrough(e)) {
                    throw e;
                }
                abortAndRewind(e);
                return false;
            }
        }
        isolateNextBatch = false;
        return true;
    }

    private KafkaException tryAlone(ConsumerRecord<byte[], byte[]> record) {
        Outcome outcome = new Outcome(Offsets.firstOffsets(List.of(record)));
        try {
            Prepared prepared = preparation.prepare(record);
            producer().begin();
            send(prepared, outcome);
            commit(Map.of(Offsets.partition(record), new OffsetAndMetadata(record.offset() + 1)), outcome);
            return null;
        } catch (KafkaException e) {
            if (passesThrough(e)) {
                throw e;
            }
            producer().abortQuietly();
            metrics.aborted();
            return e;
        }
    }

    private void send(Prepared prepared, Outcome outcome) {
        if (prepared.reason() != null) {
            deadLetter(prepared.record(), prepared.reason(), prepared.detail(), prepared.field(), prepared.error(), outcome);
            return;
        }
        List<ProducerRecord<byte[], byte[]>> outputs = prepared.outputs();
        for (int i = 0; i < outputs.size(); i++) {
            Future<RecordMetadata> written = producer().send(outputs.get(i));
            if (i == 0 || i == outputs.size() - 1) {
                outcome.sent(written);
            }
        }
        outcome.resolved(prepared.summary());
    }

    private void deadLetter(ConsumerRecord<byte[], byte[]> record, DeadLetter.Reason reason, String detail, String field,
                            String error, Outcome outcome) {
        outcome.sent(producer().send(DeadLetter.of(config.deadLetterTopic(), record, reason, detail, field, error, resolution.resolverVersion(),
                clock.instant())));
        outcome.deadLettered(reason);
        LOG.warn("dead-lettered {}-{}@{} as {}/{}: {}", record.topic(), record.partition(), record.offset(), reason, detail, error);
    }

    private void commit(Map<TopicPartition, OffsetAndMetadata> offsets, Outcome outcome) {
        commit(producer(), offsets, consumer.groupMetadata(), outcome);
    }

    /**
     * Commits the transaction open on {@code producer}, on the loop or the committing thread, and keeps it as evidence
     * for the next outage: seen to commit, or timed out (it may have committed).
     */
    private void commit(TransactionalProducer producer, Map<TopicPartition, OffsetAndMetadata> offsets, ConsumerGroupMetadata group,
                        Outcome outcome) {
        try {
            producer.commit(offsets, group);
        } catch (TransactionalProducer.Unusable timedOut) {
            // It may have committed, which only the next outage's proof can tell.
            noteCommitted(offsets, outcome, false);
            throw timedOut;
        }
        noteCommitted(offsets, outcome, true);
        fencedSinceCommit = false;
        metrics.committed(outcome.loads, outcome.deadLetters);
        vitals().progressed();
    }

    private void abortAndRewind(KafkaException cause) {
        LOG.warn("transaction aborted; redoing from the committed offsets: {}", cause.toString());
        producer().abortQuietly();
        metrics.aborted();
        rewind();
    }

    private void backOffAfter(boolean committed) {
        if (committed) {
            consecutiveFailures = 0;
            return;
        }
        consecutiveFailures++;
        pause(backoffMillis(consecutiveFailures, 100, MAX_BACKOFF));
    }


    @Override
    protected void end() {
        KafkaException last = awaitCommit();
        if (last != null) {
            LOG.warn("the last batch's commit failed ({}); its records are redone from the committed offsets by whoever reads them next",
                    last.toString());
        }
        preparation.close();
        for (TransactionalProducer producer : producers) {
            producer.close(Duration.ofSeconds(10));
        }
        if (committer != null) {
            committer.shutdownNow();
        }
    }

    /**
     * Runs inside poll on the loop thread. Only the look-ahead poll can find a transaction open: on revocation it
     * commits, with the generation that still owns the partitions, before they move to another worker; when the
     * partitions are already lost, the generation is gone and committing would fail, so it aborts.
     */
    private final class Rebalances implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            LOG.info("partitions revoked: {}", partitions);
            partitions.forEach(partition -> owned.remove(partition.partition()));
            dropAhead(partitions);
            try {
                settleRevoked();
            } finally {
                // Another worker may commit them from now on: what this one committed no longer says where they stand.
                partitions.forEach(committedHere::remove);
            }
        }

        private void settleRevoked() {
            // The previous batch's commit ends before the open one commits: never a later batch committed without it.
            if (settledPreviousFailed()) {
                return;
            }
            if (open == null || open.failure != null) {
                return;
            }
            try {
                commit(open.offsets, open.outcome);
                open = null;
            } catch (KafkaException e) {
                open.failure = e;
                abortInCallback();
            }
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            LOG.warn("partitions lost: {}", partitions);
            partitions.forEach(partition -> owned.remove(partition.partition()));
            dropAhead(partitions);
            try {
                if (settledPreviousFailed()) {
                    return;
                }
                if (open != null && open.failure == null) {
                    open.failure = new CommitFailedException("partitions " + partitions + " were lost with a transaction open; it is aborted");
                    abortInCallback();
                }
            } finally {
                partitions.forEach(committedHere::remove);
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            LOG.info("partitions assigned: {}", partitions);
            partitions.forEach(partition -> owned.add(partition.partition()));
        }

        /**
         * Waits for the commit in flight; if it failed, the open transaction, if any, is aborted with it, and the failure
         * is handled once the poll returns.
         */
        private boolean settledPreviousFailed() {
            KafkaException previous = awaitCommit();
            if (previous == null) {
                return false;
            }
            if (open != null && open.failure == null) {
                open.failure = previous;
                abortInCallback();
            } else if (open == null) {
                commitFailure = previous;
            }
            return true;
        }

        /** A fencing error here is not lost: the loop rethrows the open transaction's failure after the poll. */
        private void abortInCallback() {
            try {
                producer().abortQuietly();
            } catch (KafkaException fatal) {
                LOG.debug("abort in rebalance callback failed: {}", fatal.toString());
            }
        }
    }
}
