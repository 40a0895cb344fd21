package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.PhaseTimers;
import dev.placementaudit.service.Settings;
import dev.placementaudit.testkit.SampleEvents;
import dev.placementaudit.worker.WorkerConfig;
import dev.placementaudit.worker.pipeline.WorkerMetrics.Phase;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code pa_worker_batch_phase_seconds{phase}}: a batch's time on the loop thread, by phase, so that an operator tells a
 * slow broker (committing) from a producer that cannot keep up (sending) or preparing threads that are behind
 * (resolving). A producer made slow in one call shows up in that phase and not in the others.
 */
class ResolverLoopPhasesTest {
    private static final String INPUT = "model-loads";
    private static final TopicPartition P0 = new TopicPartition(INPUT, 0);
    private static final EventSerde<ModelLoaded> LOADS = EventSerde.of(ModelLoaded.class);
    private static final long SLOW_MILLIS = 300;

    private final MockConsumer<byte[], byte[]> consumer = new MockConsumer<>("earliest");
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private ResolverLoop loop;
    private Thread thread;

    @AfterEach
    void stop() throws InterruptedException {
        loop.shutdown();
        thread.join(10_000);
    }

    @Test
    void aSlowCommitIsCommittingTime() {
        run(new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer()) {
            @Override
            public void commitTransaction() {
                pause();
                super.commitTransaction();
            }
        });

        assertThat(seconds(Phase.COMMITTING)).as("the commit's wait").isGreaterThanOrEqualTo(SLOW_MILLIS / 1000.0);
        assertThat(seconds(Phase.SENDING)).as("the sends, which were quick").isLessThan(SLOW_MILLIS / 1000.0);
        assertThat(seconds(Phase.RESOLVING) + seconds(Phase.POLLING)).isLessThan(SLOW_MILLIS / 1000.0);
        assertThat(Phase.values()).allSatisfy(phase -> assertThat(timer(phase).count()).as(PhaseTimers.label(phase)).isEqualTo(1));
    }

    @Test
    void aSlowSendIsSendingTime() {
        run(new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer()) {
            @Override
            public synchronized Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> record, Callback callback) {
                if (record.topic().equals("load-resolved")) {
                    pause();
                }
                return super.send(record, callback);
            }
        });

        assertThat(seconds(Phase.SENDING)).as("the summary's send").isGreaterThanOrEqualTo(SLOW_MILLIS / 1000.0);
        assertThat(seconds(Phase.COMMITTING)).as("the commit, which was quick").isLessThan(SLOW_MILLIS / 1000.0);
        assertThat(seconds(Phase.RESOLVING) + seconds(Phase.POLLING)).isLessThan(SLOW_MILLIS / 1000.0);
    }

    @Test
    void everyPhaseIsExportedToPrometheus() {
        run(new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer()));

        assertThat(registry.scrape()).contains(
                "pa_worker_batch_phase_seconds_count{phase=\"resolving\"} 1",
                "pa_worker_batch_phase_seconds_count{phase=\"sending\"} 1",
                "pa_worker_batch_phase_seconds_count{phase=\"polling\"} 1",
                "pa_worker_batch_phase_seconds_count{phase=\"committing\"} 1");
    }

    /** One batch of one load through a loop on this producer, until it is committed. */
    private void run(MockProducer<byte[], byte[]> producer) {
        Map<String, String> settings = Map.of("kafka.bootstrap.servers", "unused:9092", "worker.input.topic", INPUT,
                "worker.instance.id", "phases-test", "worker.poll.timeout", "10ms", "worker.http.port", "-1");
        loop = new ResolverLoop(WorkerConfig.from(Settings.of(settings)), consumer, () -> producer, new WorkerMetrics(registry),
                new LoadResolution("test"), Clock.systemUTC());
        thread = new Thread(loop, "loop-under-test");
        ModelLoaded load = SampleEvents.edgeLoad("d0", "r1", 2);
        consumer.updateBeginningOffsets(Map.of(P0, 0L));
        consumer.schedulePollTask(() -> {
            consumer.rebalance(List.of(P0));
            consumer.addRecord(new ConsumerRecord<>(INPUT, 0, 0, load.getDeployment().getId().getBytes(StandardCharsets.UTF_8), LOADS.encode(load)));
        });

        thread.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> timer(Phase.COMMITTING).count() == 1);
    }

    private Timer timer(Phase phase) {
        return registry.get("pa.worker.batch.phase").tag("phase", PhaseTimers.label(phase)).timer();
    }

    private double seconds(Phase phase) {
        return timer(phase).totalTime(TimeUnit.SECONDS);
    }

    private static void pause() {
        try {
            Thread.sleep(SLOW_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
