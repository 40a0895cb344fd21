package dev.placementaudit.store.ingest;

import dev.placementaudit.resolution.LoadIdentity;
import dev.placementaudit.service.DeadLetter;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A batch's rejects on the dead-letter topic, each named with the projection (store group) that set it aside, counted,
 * logged; and the load id conflicts among them since this instance started ({@link LoadIds}), what {@code /health}
 * warns of (the service stays UP: nothing was lost, the first load under each id is kept).
 */
final class RejectSender {
    private static final Logger LOG = LoggerFactory.getLogger(RejectSender.class);

    private final Producer<byte[], byte[]> producer;
    private final String topic;
    /** The projection this store writes, named on each of its dead letters: several may share the topic. */
    private final byte[] projection;
    private final IngestListener metrics;
    private final Clock clock;
    private final AtomicLong conflicts = new AtomicLong();
    private volatile String lastConflict;

    RejectSender(Producer<byte[], byte[]> producer, String topic, byte[] projection, IngestListener metrics, Clock clock) {
        this.producer = producer;
        this.topic = topic;
        this.projection = projection;
        this.metrics = metrics;
        this.clock = clock;
    }

    /**
     * Sends the rejects of {@code rebound} that were not rejects in {@code batch}, its earlier check (same order and size).
     *
     * @return how many it sent: none when the check found nothing new
     */
    int sendNew(List<Decoded> batch, List<Decoded> rebound) {
        List<Decoded> fresh = new ArrayList<>();
        for (int i = 0; i < rebound.size(); i++) {
            if (rebound.get(i) instanceof Decoded.Reject && !(i < batch.size() && batch.get(i) instanceof Decoded.Reject)) {
                fresh.add(rebound.get(i));
            }
        }
        send(fresh);
        return fresh.size();
    }

    /** Sent and acknowledged before the batch commits: a crash in between re-sends (at least once), never drops. */
    void send(List<Decoded> batch) {
        for (Decoded item : batch) {
            if (item instanceof Decoded.Reject reject) {
                try {
                    ProducerRecord<byte[], byte[]> letter = DeadLetter.of(topic, reject.record(),
                            reject.reason(), reject.detail(), null, reject.error(), "audit-store", clock.instant());
                    letter.headers().add(DeadLetter.PROJECTION, projection);
                    producer.send(letter).get(30, TimeUnit.SECONDS);
                } catch (Exception e) {
                    throw new IllegalStateException("cannot dead-letter " + reject.record().topic() + "-" + reject.record().partition()
                            + "@" + reject.record().offset() + " to " + topic, e);
                }
                metrics.deadLettered(reject.reason().name());
                if (LoadIdentity.CONFLICT.equals(reject.detail())) {
                    conflicts.incrementAndGet();
                    lastConflict = reject.loadId();
                }
                LOG.warn("dead-lettered {}-{}@{} as {}/{}: {}", reject.record().topic(), reject.record().partition(),
                        reject.record().offset(), reject.reason(), reject.detail(), reject.error());
            }
        }
    }

    /** The load id conflicts set aside since the start, as one line for {@code /health}; none when there were none. */
    List<String> warnings() {
        long seen = conflicts.get();
        return seen == 0 ? List.of() : List.of(seen + " record(s) came under a load id that stands for another load since the start "
                + "(the last under " + lastConflict + "): dead-lettered as INVALID_CONTENT/" + LoadIdentity.CONFLICT
                + ", the first load kept; store where --load " + lastConflict + " shows them");
    }
}
