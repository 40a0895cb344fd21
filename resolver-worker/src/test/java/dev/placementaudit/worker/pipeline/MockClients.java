package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.schemas.EventSerde;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/** What the tests that drive the loop with Kafka's mock clients feed it, and how they check what it committed. */
final class MockClients {
    private static final EventSerde<ModelLoaded> LOADS = EventSerde.of(ModelLoaded.class);
    private static final EventSerde<AllocationDecided> DECISIONS = EventSerde.of(AllocationDecided.class);
    private static final EventSerde<LoadResolved> RESOLVED = EventSerde.of(LoadResolved.class);

    private MockClients() {
    }

    /** A load as the broker would hand it out: keyed by its deployment, at the given place. */
    static ConsumerRecord<byte[], byte[]> input(TopicPartition partition, long offset, ModelLoaded load) {
        return new ConsumerRecord<>(partition.topic(), partition.partition(), offset, load.getDeployment().getId().getBytes(StandardCharsets.UTF_8),
                LOADS.encode(load));
    }

    /** Every committed output, counted per load: each tensor's decision and the summary exactly once, nothing else. */
    static void assertExactlyOnce(List<ProducerRecord<byte[], byte[]>> committed, List<ModelLoaded> expected) {
        Map<String, Long> decisions = committed.stream().filter(r -> r.topic().equals("allocation-decided"))
                .map(r -> DECISIONS.decode(r.value()).getLoadId()).collect(Collectors.groupingBy(Function.identity(), Collectors.counting()));
        Map<String, Long> summaries = committed.stream().filter(r -> r.topic().equals("load-resolved"))
                .map(r -> RESOLVED.decode(r.value()).getLoadId().toString()).collect(Collectors.groupingBy(Function.identity(), Collectors.counting()));

        assertThat(decisions).isEqualTo(expected.stream().collect(Collectors.toMap(l -> l.getLoadId().toString(), l -> (long) l.getTensors().size())));
        assertThat(summaries).isEqualTo(expected.stream().collect(Collectors.toMap(l -> l.getLoadId().toString(), l -> 1L)));
        assertThat(committed).hasSize(decisions.values().stream().mapToInt(Long::intValue).sum() + summaries.size());
    }

    /** Transactions the loop aborted, as its metrics count them. */
    static double aborted(MeterRegistry registry) {
        return registry.counter("pa.worker.transactions", "outcome", "aborted").count();
    }
}
