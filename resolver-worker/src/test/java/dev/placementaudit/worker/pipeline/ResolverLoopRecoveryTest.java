package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.Settings;
import dev.placementaudit.testkit.SampleEvents;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.resolution.LoadResolution;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What the loop does when its transactional producer cannot go on, driven with Kafka's mock clients so each error lands
 * exactly where the broker's would: an epoch bumped by the coordinator or a producer left in an error state is made
 * anew, the consumer kept; fencing that comes back before anything commits is another live instance, and stops it.
 * {@link WorkerBrokerOutageTest} takes a real broker away.
 */
class ResolverLoopRecoveryTest {
    private static final String INPUT = "model-loads";
    private static final TopicPartition P0 = new TopicPartition(INPUT, 0);
    private static final EventSerde<ModelLoaded> LOADS = EventSerde.of(ModelLoaded.class);

    private final MockConsumer<byte[], byte[]> consumer = new MockConsumer<>("earliest");
    private final List<MockProducer<byte[], byte[]>> producers = new ArrayList<>();
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final WorkerMetrics metrics = new WorkerMetrics(registry);
    private final ResolverLoop loop = new ResolverLoop(WorkerConfig.from(Settings.of(Map.of("kafka.bootstrap.servers", "unused:9092",
            "worker.input.topic", INPUT, "worker.instance.id", "recovery-test", "worker.poll.timeout", "10ms", "worker.http.port", "-1"))),
            consumer, this::nextProducer, metrics, new LoadResolution("test"), Clock.systemUTC());
    private final Thread thread = new Thread(loop, "loop-under-test");
    private final ModelLoaded load = SampleEvents.edgeLoad("d0", "r1", 2);
    /** What the next producer made throws from its first commit; null for none. */
    private volatile RuntimeException nextCommitFails;
    /** What the next producer made throws when the offsets are added to its first transaction; null for none. */
    private volatile RuntimeException nextSendOffsetsFails;

    ResolverLoopRecoveryTest() {
        consumer.updateBeginningOffsets(Map.of(P0, 0L));
    }

    @AfterEach
    void stop() throws InterruptedException {
        loop.shutdown();
        thread.join(10_000);
    }

    private synchronized MockProducer<byte[], byte[]> nextProducer() {
        MockProducer<byte[], byte[]> producer = new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
        producer.commitTransactionException = nextCommitFails;
        producer.sendOffsetsToTransactionException = nextSendOffsetsFails;
        producers.add(producer);
        return producer;
    }

    private synchronized MockProducer<byte[], byte[]> producer(int index) {
        return producers.size() > index ? producers.get(index) : null;
    }

    @Test
    void anEpochBumpedByTheCoordinatorMakesTheProducerAnewAndTheBatchIsRedone() {
        nextCommitFails = new InvalidProducerEpochException("the coordinator aborted the transaction after its timeout");
        failsOnceThenRecovers(() -> { });

        assertThat(producer(0).closed()).as("the old producer is closed").isTrue();
        assertThat(producer(1).history()).hasSize(load.getTensors().size() + 1);
        assertThat(loop.state()).isEqualTo(ResolverLoop.State.RUNNING);
    }

    @Test
    void aProducerThatCannotEvenAbortIsMadeAnew() {
        nextCommitFails = new KafkaException("Cannot execute transactional method because we are in an error state");
        failsOnceThenRecovers(() -> producer(0).abortTransactionException =
                new KafkaException("Cannot execute transactional method because we are in an error state"));

        assertThat(loop.state()).isEqualTo(ResolverLoop.State.RUNNING);
    }

    /**
     * What a broker outage showed: after {@code sendOffsetsToTransaction} timed out, a client-side abort that "succeeded"
     * left the batch's records committed on the broker without its offsets, and the batch was redone. A timeout is never
     * followed by a client-side abort: the producer is made anew, whose {@code initTransactions} settles the transaction
     * on the broker, and only then is the batch redone from the committed offsets.
     */
    @Test
    void aTimedOutTransactionIsNotAbortedByTheClientButSettledByANewProducer() {
        nextSendOffsetsFails = new TimeoutException("Timeout expired after 10000ms while awaiting TxnOffsetCommitHandler");
        failsOnceThenRecovers(() -> { });

        assertThat(producer(0).transactionAborted()).as("no abort by the client after a timeout").isFalse();
        assertThat(producer(0).closed()).as("the old producer is closed").isTrue();
        assertThat(producer(1).history()).hasSize(load.getTensors().size() + 1);
        assertThat(loop.state()).isEqualTo(ResolverLoop.State.RUNNING);
    }

    @Test
    void aTimedOutCommitIsNotAbortedByTheClientEither() {
        nextCommitFails = new TimeoutException("Timeout expired after 10000ms while awaiting EndTxn(true)");
        failsOnceThenRecovers(() -> { });

        assertThat(producer(0).transactionAborted()).isFalse();
    }

    /**
     * The first producer's first transaction fails as set up ({@code alsoOnTheFirst} may arm it further); the record is
     * offered again after the rewind, and a second producer commits it, once.
     */
    private void failsOnceThenRecovers(Runnable alsoOnTheFirst) {
        consumer.schedulePollTask(() -> {
            consumer.rebalance(List.of(P0));
            alsoOnTheFirst.run();
            nextCommitFails = null;
            nextSendOffsetsFails = null;
            offer();
        });
        consumer.schedulePollTask(this::offer); // after the rewind, the broker still has the record

        thread.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> producer(1) != null && producer(1).commitCount() == 1);
        assertThat(metrics.producersRecreated()).isEqualTo(1);
    }

    @Test
    void fencedAgainBeforeAnythingCommitsIsAnotherInstanceAndStopsTheLoop() {
        nextCommitFails = new ProducerFencedException("another producer with the same transactional id");
        consumer.schedulePollTask(() -> {
            consumer.rebalance(List.of(P0));
            offer();
        });
        consumer.schedulePollTask(this::offer);
        consumer.schedulePollTask(this::offer);

        thread.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> loop.state() == ResolverLoop.State.FAILED);

        assertThat(loop.failure()).isInstanceOf(ProducerFencedException.class);
        assertThat(producers).hasSize(2);
        assertThat(producers).allSatisfy(p -> assertThat(p.commitCount()).isZero());
    }

    private void offer() {
        consumer.addRecord(new ConsumerRecord<>(INPUT, 0, 0, "d0".getBytes(StandardCharsets.UTF_8), LOADS.encode(load)));
    }
}
