package dev.placementaudit.service;

import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/** Records sent and their acknowledgements awaited, the way every producer of the project needs them. */
public final class Sends {
    /** The longest wait for one record's acknowledgement; the producer's own delivery timeout is shorter. */
    private static final long ACK_WAIT_SECONDS = 30;

    private Sends() {
    }

    /**
     * The record's acknowledgement: completed with where it was written, or exceptionally with why not, including a
     * failure to make the record ({@code record} throws: an event that does not encode) or to hand it to the producer.
     */
    public static <K, V> CompletableFuture<RecordMetadata> acknowledged(Producer<K, V> producer, Supplier<ProducerRecord<K, V>> record) {
        CompletableFuture<RecordMetadata> acknowledged = new CompletableFuture<>();
        try {
            producer.send(record.get(), (metadata, failure) -> {
                if (failure == null) {
                    acknowledged.complete(metadata);
                } else {
                    acknowledged.completeExceptionally(failure);
                }
            });
        } catch (RuntimeException e) {
            acknowledged.completeExceptionally(e);
        }
        return acknowledged;
    }

    /** Sends every record, then waits until the broker has acknowledged each; throws on the first that it did not. */
    public static <K, V> void all(Producer<K, V> producer, List<ProducerRecord<K, V>> records)
            throws InterruptedException, ExecutionException, TimeoutException {
        List<Future<?>> sends = new ArrayList<>(records.size());
        for (ProducerRecord<K, V> record : records) {
            sends.add(producer.send(record));
        }
        for (Future<?> send : sends) {
            send.get(ACK_WAIT_SECONDS, TimeUnit.SECONDS);
        }
    }
}
