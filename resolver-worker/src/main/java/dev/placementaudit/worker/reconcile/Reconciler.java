package dev.placementaudit.worker.reconcile;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.service.Outage;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * How the worker proves its own completeness, whatever Kafka does: it reads the summaries and the dead letters
 * read_committed (each names the input offset it came from; the input itself is not read), and every offset of the input
 * the worker's group has committed past that still has neither a summary nor a dead letter after
 * {@code worker.reconcile.after} is read again and, when a load is there, resolved again and published in a transaction of
 * its own. Its
 * decision ids are the same, so the store takes it once; a load that was only late appears twice on the worker's
 * topics, each such load named in a warning that begins {@link #RECONCILED}. Counted by {@code pa_worker_reconciled_total}.
 *
 * <p>It also watches the worker's output partitions for a transaction left hanging (readers held at one offset for longer
 * than any transaction may stay open), which it reports with the operator's commands, on {@code /health} and in
 * {@code pa_worker_hanging_partitions}, and never aborts (docs/adr/0020-completeness-by-reconciliation.md).
 */
public final class Reconciler implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(Reconciler.class);
    /** How every warning of a load resolved again begins: what to search a worker's log for (the chaos soak does). */
    public static final String RECONCILED = "reconciled: ";
    private static final EventSerde<LoadResolved> SUMMARIES = EventSerde.of(LoadResolved.class);

    /** What a load is resolved into again: its outputs (or its dead letter), in order, and the load id when it decodes. */
    public record Redo(List<ProducerRecord<byte[], byte[]>> outputs, String loadId) {
    }

    /** @param after how long the group may be past a load with no output before it is resolved again */
    public record Settings(String inputTopic, String resolvedTopic, String deadLetterTopic, List<String> watchedTopics, String groupId,
                           Duration after, Duration lookback, Duration hangingBound) {
    }

    private final Settings settings;
    private final Consumer<byte[], byte[]> consumer;
    /** Reads again, by offset, the few loads found overdue (the reader keeps only offsets). */
    private final InputRefetch refetch;
    private final Admin admin;
    private final Supplier<Producer<byte[], byte[]>> producers;
    private final Function<ConsumerRecord<byte[], byte[]>, Redo> redo;
    private final Supplier<Set<Integer>> owned;
    private final Clock clock;
    private final Completeness completeness = new Completeness();
    private final OutputLook look;
    private final ReadPositions positions;
    private final Counter reconciled;
    private final AtomicInteger overdue = new AtomicInteger();
    /** Kafka away: said when it starts and when it ends, not at every try. */
    private final Outage outage = new Outage(LOG, "reconciling");
    private volatile boolean running = true;
    /** What the reconciler failed on last, not Kafka's doing, until it works again: a problem on {@code /health}. */
    private volatile String failing;
    /** One look: when, where the group's offsets stood, and where each summary and dead-letter partition ended then. */
    private record Look(Instant at, Map<Integer, Long> committed, Map<TopicPartition, Long> ends) {
    }

    /** Looks by number, from the one bounding what is overdue on; the newest whose ends the reader has passed. */
    private final TreeMap<Long, Look> looks = new TreeMap<>();
    private long lastLook;
    private long readThrough;
    private Producer<byte[], byte[]> producer;

    /**
     * @param consumer  reads the input and the outputs, read_committed, with no group
     * @param refetch   reads an overdue load again by its offset, read_committed, with no group
     * @param producers makes the transactional producer it publishes with (its own transactional id), when first needed
     * @param redo      resolves a load again, as the worker's loop does
     * @param owned     the input partitions this instance's loop owns now: only those are reconciled here
     */
    public Reconciler(Settings settings, Consumer<byte[], byte[]> consumer, Consumer<byte[], byte[]> refetch, Admin admin,
                      Supplier<Producer<byte[], byte[]>> producers,
                      Function<ConsumerRecord<byte[], byte[]>, Redo> redo, Supplier<Set<Integer>> owned, MeterRegistry registry, Clock clock) {
        this.settings = settings;
        this.consumer = consumer;
        this.refetch = new InputRefetch(settings.inputTopic(), refetch);
        this.admin = admin;
        this.producers = producers;
        this.redo = redo;
        this.owned = owned;
        this.clock = clock;
        this.positions = new ReadPositions(settings, consumer, admin, completeness, clock);
        this.look = new OutputLook(settings.watchedTopics(), settings.groupId(), settings.hangingBound(), consumer, admin, registry);
        this.reconciled = Counter.builder("pa.worker.reconciled").description("loads resolved again: the group was past them, with no output "
                + "after worker.reconcile.after").register(registry);
        Gauge.builder("pa.worker.reconcile.overdue", overdue, AtomicInteger::get).description("loads the group committed past with no summary "
                + "or dead letter read yet").register(registry);
    }

    /** The {@code __consumer_offsets} partition that holds {@code groupId}'s offsets, of {@code partitions}: Kafka's own rule. */
    public static TopicPartition groupOffsetsPartition(String groupId, int partitions) {
        return OutputLook.groupOffsetsPartition(groupId, partitions);
    }

    /** The problems a person must act on, for {@code /health}: a transaction left hanging, or the reconciler failing. */
    public List<String> problems() {
        String failed = failing;
        if (failed == null) {
            return look.problems();
        }
        List<String> problems = new ArrayList<>(look.problems());
        problems.add("the reconciler fails (" + failed + "): no load is proven complete meanwhile; the worker's log has the cause");
        return problems;
    }

    @Override
    public void run() {
        int failures = 0;
        Instant nextCheck = Instant.EPOCH;
        boolean started = false;
        while (running) {
            try {
                if (!started) {
                    positions.start();
                    started = true;
                }
                read();
                if (!clock.instant().isBefore(nextCheck)) {
                    check();
                    nextCheck = clock.instant().plus(checkEvery());
                }
                failures = 0;
                failing = null;
                outage.ended();
            } catch (WakeupException e) {
                if (running) {
                    throw e;
                }
            } catch (KafkaException e) {
                failures++;
                outage.failed(e + (e.getCause() == null ? "" : " <- " + e.getCause()));
                closeProducer();
                pause(Math.min(5_000, 200L << Math.min(failures, 5)));
            } catch (RuntimeException e) {
                // Not Kafka's: a bug of ours. Completeness is not proven meanwhile, so /health says so; tried again, never
                // left to end the thread with nothing said.
                failures++;
                if (failing == null) {
                    LOG.error("the reconciler failed; no load is proven complete until it works again (trying again)", e);
                }
                failing = e.toString();
                closeProducer();
                pause(Math.min(5_000, 200L << Math.min(failures, 5)));
            }
        }
        closeProducer();
        consumer.close(Duration.ofSeconds(5));
        refetch.close();
    }

    /** Stops the thread within one poll. */
    public void stop() {
        running = false;
        consumer.wakeup();
    }

    private void read() {
        for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
            if (record.topic().equals(settings.resolvedTopic())) {
                settledBySummary(record);
            } else {
                settledByDeadLetter(record);
            }
        }
    }

    private void settledBySummary(ConsumerRecord<byte[], byte[]> record) {
        LoadResolved summary;
        try {
            summary = SUMMARIES.decode(record.value());
        } catch (RuntimeException e) {
            LOG.debug("a record on {} that is not a summary: {}", record.topic(), e.toString());
            return;
        }
        String from = summary.getSourceTopic();
        if (from == null || from.equals(settings.inputTopic())) {
            completeness.settled(summary.getSourcePartition(), summary.getSourceOffset());
        }
    }

    private void settledByDeadLetter(ConsumerRecord<byte[], byte[]> record) {
        String topic = header(record, DeadLetter.SOURCE_TOPIC);
        String partition = header(record, DeadLetter.SOURCE_PARTITION);
        String offset = header(record, DeadLetter.SOURCE_OFFSET);
        if (settings.inputTopic().equals(topic) && partition != null && offset != null) {
            completeness.settled(Integer.parseInt(partition), Long.parseLong(offset));
        }
    }

    private static String header(ConsumerRecord<byte[], byte[]> record, String key) {
        Header header = record.headers().lastHeader(key);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    /** The group's offsets against what was read; loads overdue resolved again; the output partitions looked at for a hang. */
    private void check() {
        Map<Integer, Long> committed = new HashMap<>();
        try {
            admin.listConsumerGroupOffsets(settings.groupId()).partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS)
                    .forEach((partition, offset) -> {
                        if (partition.topic().equals(settings.inputTopic()) && offset != null) {
                            committed.put(partition.partition(), offset.offset());
                        }
                    });
        } catch (Exception e) {
            throw new KafkaException("reading the group's committed offsets failed", e);
        }
        // Read after the group's offsets: whatever that commit vouched for was written below these ends.
        OutputLook.Offsets outputs = look.read();
        positions.follow(committed, outputs.high().keySet());
        Instant now = clock.instant();
        Map<TopicPartition, Long> ends = new HashMap<>();
        outputs.high().forEach((partition, end) -> {
            if (partition.topic().equals(settings.resolvedTopic()) || partition.topic().equals(settings.deadLetterTopic())) {
                ends.put(partition, end);
            }
        });
        looks.put(++lastLook, new Look(now, committed, ends));
        Map.Entry<Long, Look> boundary = boundary(now);
        if (boundary != null) {
            looks.headMap(boundary.getKey(), false).clear();
            List<Completeness.Load> late = completeness.overdue(boundary.getValue().committed(), owned.get());
            if (!late.isEmpty()) {
                resolveAgain(late);
            }
        }
        overdue.set(completeness.committedPastUnsettled(committed));
        look.lookForHanging(outputs, now);
    }

    /**
     * The newest look at least {@code after} old whose outputs' ends (as far as they were written then) the reader has read
     * up to on every summary and dead-letter partition: the group's offsets then bound what is overdue now.
     */
    private Map.Entry<Long, Look> boundary(Instant now) {
        for (Map.Entry<Long, Look> look : looks.tailMap(readThrough, false).entrySet()) {
            if (!passed(look.getValue().ends())) {
                break;
            }
            readThrough = look.getKey();
        }
        Map.Entry<Long, Look> chosen = null;
        for (Map.Entry<Long, Look> look : looks.headMap(readThrough, true).entrySet()) {
            if (!look.getValue().at().plus(settings.after()).isAfter(now)) {
                chosen = look;
            }
        }
        return chosen;
    }

    private boolean passed(Map<TopicPartition, Long> ends) {
        for (Map.Entry<TopicPartition, Long> end : ends.entrySet()) {
            if (consumer.position(end.getKey(), Duration.ofSeconds(10)) < end.getValue()) {
                return false;
            }
        }
        return true;
    }

    private void resolveAgain(List<Completeness.Load> late) {
        List<Redo> again = new ArrayList<>();
        List<ConsumerRecord<byte[], byte[]>> records;
        try {
            records = refetch.read(late);
        } catch (KafkaException e) {
            completeness.retry(late);
            throw e;
        }
        for (ConsumerRecord<byte[], byte[]> load : records) {
            Redo redone = redo.apply(load);
            again.add(redone);
            // Said before it is published: a worker killed between the commit and a line after it would leave a load
            // twice on its topics that nothing explains.
            LOG.warn(RECONCILED + "{} ({}-{}@{}) has no summary nor dead letter {} after the group committed past it: resolving it again (a "
                    + "Kafka transaction that kept its offsets and lost its outputs, or outputs that are only late; the store takes it once)",
                    redone.loadId() == null ? "an undecodable load" : "load " + redone.loadId(), load.topic(), load.partition(), load.offset(),
                    settings.after());
        }
        try {
            if (producer == null) {
                producer = producers.get();
                producer.initTransactions();
            }
            producer.beginTransaction();
            again.forEach(redone -> redone.outputs().forEach(producer::send));
            producer.commitTransaction();
        } catch (KafkaException e) {
            // Not resolved again: they come back on the next check, since the group is still past them with no output.
            LOG.warn("resolving {} load(s) again failed ({}); trying again at the next look", late.size(), e.toString());
            completeness.retry(late);
            throw e;
        }
        reconciled.increment(records.size());
    }

    private Duration checkEvery() {
        Duration quarter = settings.after().dividedBy(4);
        return quarter.compareTo(Duration.ofSeconds(5)) > 0 ? Duration.ofSeconds(5) : quarter.compareTo(Duration.ofMillis(500)) < 0
                ? Duration.ofMillis(500) : quarter;
    }

    private void closeProducer() {
        if (producer != null) {
            try {
                producer.close(Duration.ZERO);
            } catch (KafkaException e) {
                LOG.debug("closing the reconciler's producer: {}", e.toString());
            }
            producer = null;
        }
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
