package dev.placementaudit.producer.publish;

import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.service.Sends;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * What a runtime embeds to report its model loads: one call per load, keyed by deployment so a deployment's
 * loads stay in order, and, where the runtime measures what it holds, one {@link LoadObserved} after its load, keyed
 * alike. Idempotent and compressed; every wait is bounded, and a broker that does not answer is
 * reported by name instead of hanging the runtime's load path.
 *
 * <pre>{@code
 * try (PlacementEvents events = PlacementEvents.connect(Map.of("bootstrap.servers", "kafka:9092"), "model-loads", Duration.ofSeconds(15))) {
 *     events.publish(modelLoaded);
 * }
 * }</pre>
 */
public final class PlacementEvents implements AutoCloseable {
    /** Where observations go unless told otherwise. */
    public static final String OBSERVATIONS_TOPIC = "load-observations";
    private static final EventSerde<ModelLoaded> LOADS = EventSerde.of(ModelLoaded.class);
    private static final EventSerde<LoadObserved> OBSERVATIONS = EventSerde.of(LoadObserved.class);
    private final KafkaProducer<String, byte[]> producer;
    private final String topic;
    private final String observationsTopic;
    private final String bootstrapServers;
    private final Duration maxWait;

    private PlacementEvents(KafkaProducer<String, byte[]> producer, String topic, String observationsTopic, String bootstrapServers,
                            Duration maxWait) {
        this.producer = producer;
        this.topic = topic;
        this.observationsTopic = observationsTopic;
        this.bootstrapServers = bootstrapServers;
        this.maxWait = maxWait;
    }

    /**
     * @param kafka   client settings (bootstrap.servers and any security settings), passed through unchanged
     * @param maxWait the longest a publish may take before it fails, metadata lookup and delivery included
     */
    public static PlacementEvents connect(Map<String, Object> kafka, String topic, Duration maxWait) {
        return connect(kafka, topic, OBSERVATIONS_TOPIC, maxWait);
    }

    /** @param observationsTopic where {@link #publishObservation} writes */
    public static PlacementEvents connect(Map<String, Object> kafka, String topic, String observationsTopic, Duration maxWait) {
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
        KafkaProducer<String, byte[]> producer = new KafkaProducer<>(config, new StringSerializer(), new ByteArraySerializer());
        return new PlacementEvents(producer, topic, observationsTopic, bootstrap.toString(), maxWait);
    }

    /** Publishes and waits for the broker's acknowledgement. */
    public RecordMetadata publish(ModelLoaded load) {
        return await(publishAsync(load), "load " + load.getLoadId(), topic, load.getTensors().size() + " tensors");
    }

    /**
     * Publishes what the runtime measured after {@code observation}'s load, keyed by its deployment like the load, and
     * waits for the broker's acknowledgement. Publish it after the load: the store waits for a load whose observation
     * comes first, but a load is complete without one.
     */
    public RecordMetadata publishObservation(LoadObserved observation) {
        return await(send(observationsTopic, observation.getDeploymentId(), () -> OBSERVATIONS.encode(observation)),
                "observation of load " + observation.getLoadId(), observationsTopic, observation.getTensors().size() + " tensors");
    }

    /** As {@link #publishObservation}, without waiting: the future completes with the broker's acknowledgement. */
    public CompletableFuture<RecordMetadata> publishObservationAsync(LoadObserved observation) {
        return send(observationsTopic, observation.getDeploymentId(), () -> OBSERVATIONS.encode(observation));
    }

    private RecordMetadata await(CompletableFuture<RecordMetadata> sent, String what, String to, String size) {
        try {
            return sent.get(maxWait.toMillis() + 5_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PublishException("interrupted publishing " + what, e);
        } catch (ExecutionException e) {
            throw explain(what, to, size, e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw explain(what, to, size, e);
        }
    }

    public CompletableFuture<RecordMetadata> publishAsync(ModelLoaded load) {
        return send(topic, load.getDeployment().getId(), () -> LOADS.encode(load));
    }

    private CompletableFuture<RecordMetadata> send(String to, String key, Supplier<byte[]> value) {
        return Sends.acknowledged(producer, () -> new ProducerRecord<>(to, key, value.get()));
    }

    public void flush() {
        producer.flush();
    }

    /** What went wrong with {@code load}, in terms of the configuration to fix. */
    public PublishException describeFailure(ModelLoaded load, Throwable error) {
        return explain("load " + load.getLoadId(), topic, load.getTensors().size() + " tensors",
                error instanceof CompletionException && error.getCause() != null ? error.getCause() : error);
    }

    private PublishException explain(String what, String to, String size, Throwable error) {
        if (error instanceof RecordTooLargeException) {
            return new PublishException(what + " with " + size + " is too large for one Kafka record: " + error.getMessage()
                    + " Raise kafka.max.request.size here and max.message.bytes on topic " + to, error);
        }
        if (error instanceof TimeoutException || error instanceof java.util.concurrent.TimeoutException) {
            return new PublishException("no Kafka broker at " + bootstrapServers + " acknowledged " + what + " on topic "
                    + to + " within " + maxWait.toSeconds() + " s (" + error.getMessage() + "); check kafka.bootstrap.servers, "
                    + "that the topic exists, and the security settings", error);
        }
        return new PublishException("publishing " + what + " to " + to + " at " + bootstrapServers + " failed: " + error, error);
    }

    @Override
    public void close() {
        producer.close(maxWait);
    }
}
