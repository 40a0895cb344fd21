package dev.placementaudit.worker.pipeline;

import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TopicReader;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The sweep for transactions left hanging, against a real broker: it must never take a live transaction from under its
 * producer, the worker's own or another's, however short the age it is given; and a broker that does not answer costs a
 * sweep, not the worker. {@link HangingTransactionsTest} drives which transactions it aborts; what a broker killed
 * mid-transaction leaves behind is met by {@link WorkerBrokerOutageTest}.
 */
@ExtendWith(KafkaBrokerExtension.class)
class HangingSweepTest {

    @Test
    void neverAbortsALiveTransactionOfItsOwnIdOrAnothers(KafkaBroker broker) throws Exception {
        String resolved = KafkaBroker.uniqueTopic("sweep") + ".resolved";
        String decided = resolved.replace(".resolved", ".decided");
        String dlq = resolved.replace(".resolved", ".dlq");
        broker.createTopics(2, resolved, decided, dlq);
        String ours = "tx-" + resolved;
        try (Admin admin = Admin.create(broker.clientConfig());
             KafkaProducer<byte[], byte[]> worker = WorkerHarness.transactionalProducer(broker, ours);
             KafkaProducer<byte[], byte[]> other = WorkerHarness.transactionalProducer(broker, "someone-else-" + resolved)) {
            worker.beginTransaction();
            worker.send(new ProducerRecord<>(resolved, 0, null, bytes("ours")));
            worker.flush();
            other.beginTransaction();
            other.send(new ProducerRecord<>(resolved, 0, null, bytes("theirs")));
            other.flush();
            HangingTransactions hanging = new HangingTransactions(admin, ours, List.of(decided, resolved, dlq), "group-" + resolved, Duration.ofSeconds(10));

            // With no age to wait for, anything seen open twice that is not the coordinator's live transaction goes.
            assertThat(hanging.sweep(Instant.now(), Duration.ZERO)).isZero();
            assertThat(hanging.sweep(Instant.now(), Duration.ZERO)).isZero();

            worker.commitTransaction();
            other.commitTransaction();
        }
        assertThat(TopicReader.readCommitted(broker, resolved, 2, Duration.ofSeconds(30), Duration.ofSeconds(1)))
                .as("both transactions committed, read_committed").extracting(r -> new String(r.value(), StandardCharsets.UTF_8))
                .containsExactlyInAnyOrder("ours", "theirs");
    }

    @Test
    void aBrokerThatDoesNotAnswerCostsASweepNotTheWorker() {
        Map<String, Object> nowhere = Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1", AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 1000,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 1000);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (Admin admin = Admin.create(nowhere)) {
            HangingTransactions hanging = new HangingTransactions(admin, "tx-nowhere", List.of("out"), "group", Duration.ofSeconds(1));
            HangingSweep sweep = new HangingSweep(List.of(hanging), new WorkerMetrics(registry), Clock.systemUTC(), Duration.ofSeconds(10));
            long started = System.nanoTime();

            assertThat(sweep.sweepOnce()).isZero();

            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(5));
        }
        assertThat(registry.counter("pa.worker.hanging.transactions.aborted").count()).isZero();
    }

    @Test
    void sweepsEveryHalfTransactionTimeoutAndAbortsPastTheTimeoutAndTheCoordinatorsOwnLook() {
        WorkerMetrics metrics = new WorkerMetrics(new SimpleMeterRegistry());
        HangingSweep worker = new HangingSweep(List.of(), metrics, Clock.systemUTC(), Duration.ofSeconds(30));
        assertThat(worker.period()).isEqualTo(Duration.ofSeconds(15));
        assertThat(worker.minAge()).isEqualTo(Duration.ofSeconds(50));
        assertThat(new HangingSweep(List.of(), metrics, Clock.systemUTC(), Duration.ofSeconds(4)).period())
                .as("never more often than every 5 s").isEqualTo(Duration.ofSeconds(5));
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
