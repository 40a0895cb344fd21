package dev.placementaudit.producer.publish;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.schemas.EventSerde;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * What a runtime embeds to report its model loads: one call per load, keyed by deployment so a deployment's
 * loads stay in order. Idempotent and compressed; every wait is bounded, and a broker that does not answer is
 * reported by name instead of hanging the runtime's load path.
 *
 * <pre>{@code
 * try (PlacementEvents events = PlacementEvents.connect(Map.of("bootstrap.servers", "kafka:9092"), "model-loads", Duration.ofSeconds(15))) {
 *     events.publish(modelLoaded);
 * }
 * }</pre>
 */
public final class PlacementEvents implements AutoCloseable {
    private final KafkaProducer<String, ModelLoaded> producer;
    private final String topic;
    private final String bootstrapServers;
    private final Duration maxWait;

    private PlacementEvents(KafkaProducer<String, ModelLoaded> producer, String topic, String bootstrapServers, Duration maxWait) {
        this.producer = producer;
        this.topic = topic;
        this.bootstrapServers = bootstrapServers;
        this.maxWait = maxWait;
    }

    /**
     * @param kafka   client settings (bootstrap.servers and any security settings), passed through unchanged
     * @param maxWait the longest a publish may take before it fails, metadata lookup and delivery included
     */
    public static PlacementEvents connect(Map<String, Object> kafka, String topic, Duration maxWait) {
        AvroTrust.install();
        Map<String, Object> config = new HashMap<>(kafka);
        Object bootstrap = config.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG);
        if (bootstrap == null || bootstrap.toString().isBlank()) {
            throw new IllegalArgumentException("bootstrap.servers is required to publish model loads");
        }
        long wait = maxWait.toMillis();
        config.putIfAbsent(ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd");
        config.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, "5");
        config.putIfAbsent(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, Integer.toString(4 * 1024 * 1024));
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(wait));
        long request = Math.max(1_000, wait / 2);
        config.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(request));
        config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Long.toString(Math.max(wait, request + 5 + 1)));
        KafkaProducer<String, ModelLoaded> producer = new KafkaProducer<>(config, new StringSerializer(), EventSerde.of(ModelLoaded.class));
        return new PlacementEvents(producer, topic, bootstrap.toString(), maxWait);
    }

    /** Publishes and waits for the broker's acknowledgement. */
    public RecordMetadata publish(ModelLoaded load) {
        try {
            return publishAsync(load).get(maxWait.toMillis() + 5_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PublishException("interrupted publishing load " + load.getLoadId(), e);
        } catch (ExecutionException e) {
            throw explain(load, e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw explain(load, e);
        }
    }

    public CompletableFuture<RecordMetadata> publishAsync(ModelLoaded load) {
        CompletableFuture<RecordMetadata> result = new CompletableFuture<>();
        try {
            producer.send(new ProducerRecord<>(topic, load.getDeployment().getId(), load), (metadata, error) -> {
                if (error == null) {
                    result.complete(metadata);
                } else {
                    result.completeExceptionally(error);
                }
            });
        } catch (RuntimeException e) {
            result.completeExceptionally(e);
        }
        return result;
    }

    public void flush() {
        producer.flush();
    }

    /** What went wrong with {@code load}, in terms of the configuration to fix. */
    public PublishException describeFailure(ModelLoaded load, Throwable error) {
        return explain(load, error instanceof CompletionException && error.getCause() != null ? error.getCause() : error);
    }

    private PublishException explain(ModelLoaded load, Throwable error) {
        if (error instanceof RecordTooLargeException) {
            return new PublishException("load " + load.getLoadId() + " with " + load.getTensors().size() + " tensors is too large for one "
                    + "Kafka record: " + error.getMessage() + " Raise kafka.max.request.size here and max.message.bytes on topic " + topic, error);
        }
        if (error instanceof TimeoutException || error instanceof java.util.concurrent.TimeoutException) {
            return new PublishException("no Kafka broker at " + bootstrapServers + " acknowledged load " + load.getLoadId() + " on topic "
                    + topic + " within " + maxWait.toSeconds() + " s (" + error.getMessage() + "); check kafka.bootstrap.servers, "
                    + "that the topic exists, and the security settings", error);
        }
        return new PublishException("publishing load " + load.getLoadId() + " to " + topic + " at " + bootstrapServers + " failed: " + error, error);
    }

    @Override
    public void close() {
        producer.close(maxWait);
    }
}
