package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.resolution.InvalidLoadException;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.resolution.Provenance;
import dev.placementaudit.resolution.ResolvedLoad;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.schemas.LoadLayouts;
import dev.placementaudit.schemas.UndecodableEventException;
import dev.placementaudit.service.DaemonThreads;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.worker.WorkerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.WakeupException;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * What each polled record turns into, worked out off the loop thread and without touching Kafka: decoded, validated,
 * resolved and encoded with the {@code resolution} library, on {@code worker.resolve.threads} threads, and taken back in
 * poll order, so the first records are sent while the later ones are still being resolved.
 */
final class RecordPreparation implements AutoCloseable {
    private final WorkerConfig config;
    private final LoadValidator validator;
    private final LoadResolution resolution;
    private final Clock clock;
    /** Loads read with their layouts decoded once per distinct bytes (LoadResolution remembers the valid ones). */
    private final LoadLayouts layouts = new LoadLayouts(LoadResolution.LAYOUTS);
    private final EventSerde<LoadResolved> resolvedSerde = EventSerde.of(LoadResolved.class);
    /** Prepares a batch's records in parallel; null when configured for one thread. */
    private final ExecutorService resolvers;

    RecordPreparation(WorkerConfig config, LoadResolution resolution, Clock clock) {
        this.config = config;
        this.validator = new LoadValidator(config.maxTensorsPerLoad());
        this.resolution = resolution;
        this.clock = clock;
        this.resolvers = config.resolveThreads() > 1 ? Executors.newFixedThreadPool(config.resolveThreads(),
                DaemonThreads.named("resolver-prepare-" + config.instanceId())) : null;
    }

    /**
     * Everything a record turns into, worked out without touching Kafka: decode, validate, resolve, encode. Pure,
     * so a batch's records are prepared in parallel and then sent in their original order.
     */
    Prepared prepare(ConsumerRecord<byte[], byte[]> record) {
        LoadLayouts.Read read;
        try {
            read = layouts.read(record.value());
        } catch (UndecodableEventException e) {
            return Prepared.deadLetter(record, DeadLetter.Reason.UNDECODABLE, e.reason().name(), null, e.getMessage());
        }
        ResolvedLoad resolved;
        try {
            // Validated and resolved in one call: a load laid out as one resolved before reuses its layout.
            resolved = resolution.resolve(read, validator, new Provenance(record.topic(), record.partition(), record.offset()), clock.instant());
        } catch (InvalidLoadException e) {
            return Prepared.deadLetter(record, DeadLetter.Reason.INVALID_CONTENT, e.code().name(), e.field(), e.getMessage());
        }
        byte[] key = read.load().getDeployment().getId().getBytes(StandardCharsets.UTF_8);
        List<ProducerRecord<byte[], byte[]>> outputs = new ArrayList<>(resolved.encodedDecisions().size() + 1);
        for (byte[] decision : resolved.encodedDecisions()) {
            outputs.add(new ProducerRecord<>(config.decisionsTopic(), key, decision));
        }
        outputs.add(new ProducerRecord<>(config.resolvedTopic(), key, resolvedSerde.encode(resolved.summary())));
        // Only the summary is kept: the decisions are in the outputs as bytes, and batches wait here to be sent.
        return new Prepared(record, outputs, resolved.summary(), null, null, null, null);
    }

    /**
     * Starts preparing every record at once; the caller takes the results in input order, so the first records
     * are being sent while the later ones are still being resolved.
     */
    List<Future<Prepared>> prepareAll(List<ConsumerRecord<byte[], byte[]>> records) {
        List<Future<Prepared>> prepared = new ArrayList<>(records.size());
        for (ConsumerRecord<byte[], byte[]> record : records) {
            prepared.add(resolvers == null ? CompletableFuture.completedFuture(prepare(record))
                    : resolvers.submit(() -> prepare(record)));
        }
        return prepared;
    }

    static Prepared await(Future<Prepared> prepared) {
        try {
            return prepared.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new WakeupException();
        } catch (ExecutionException e) {
            throw e.getCause() instanceof RuntimeException runtime ? runtime : new IllegalStateException(e.getCause());
        }
    }

    @Override
    public void close() {
        if (resolvers != null) {
            resolvers.shutdownNow();
        }
    }
}
