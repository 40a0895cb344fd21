package dev.placementaudit.service;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;

/**
 * A poison record on its way to {@code <topic>.dlq}: the original key and value bytes untouched, the original
 * headers kept, and {@code pa.dlq.*} headers that say what was wrong and where the record came from.
 */
public final class DeadLetter {
    public static final String REASON = "pa.dlq.reason";
    public static final String DETAIL = "pa.dlq.detail";
    public static final String ERROR = "pa.dlq.error";
    public static final String FIELD = "pa.dlq.field";
    public static final String SOURCE_TOPIC = "pa.dlq.source.topic";
    public static final String SOURCE_PARTITION = "pa.dlq.source.partition";
    public static final String SOURCE_OFFSET = "pa.dlq.source.offset";
    public static final String SOURCE_TIMESTAMP = "pa.dlq.source.timestamp";
    public static final String SERVICE_VERSION = "pa.dlq.service.version";
    public static final String FAILED_AT = "pa.dlq.failed.at";
    /** The projection (the audit store's group) that set the record aside; only on the store's dead letters. */
    public static final String PROJECTION = "pa.dlq.projection";
    /** Set when the original key was longer than {@link #MAX_KEY_BYTES}: its length in bytes. */
    public static final String KEY_LENGTH = "pa.dlq.key.length";
    /**
     * The most bytes of the original key a dead letter keeps. A key is a partitioner's input, not evidence (the value is
     * kept whole), and a 300,000-character deployment id as a key would make every consumer of the DLQ pay for it.
     */
    public static final int MAX_KEY_BYTES = 1024;
    /** The most characters of any {@code pa.dlq.*} header; longer text is cut and ends with "...". */
    public static final int MAX_HEADER_CHARS = 2000;

    /** Why a record could not be processed; stable, as it is matched on by whoever drains the DLQ. */
    public enum Reason {
        /** The bytes are no event of the expected type (detail: the decoder's cause). */
        UNDECODABLE,
        /** Decodes, but the content is invalid (detail: the validator's code; field header names the field). */
        INVALID_CONTENT,
        /** Its outputs could not be produced even alone in a transaction (e.g. too large for the broker). */
        PRODUCE_FAILED,
        /** Decodes, but cannot be stored (a value beyond what the projection's columns hold). */
        UNSTORABLE
    }

    private DeadLetter() {
    }

    public static ProducerRecord<byte[], byte[]> of(String dlqTopic, ConsumerRecord<byte[], byte[]> source, Reason reason,
                                                    String detail, String field, String error, String serviceVersion, Instant at) {
        Headers headers = new RecordHeaders(source.headers().toArray());
        put(headers, REASON, reason.name());
        put(headers, DETAIL, detail);
        if (field != null) {
            put(headers, FIELD, field);
        }
        put(headers, ERROR, error);
        put(headers, SOURCE_TOPIC, source.topic());
        put(headers, SOURCE_PARTITION, Integer.toString(source.partition()));
        put(headers, SOURCE_OFFSET, Long.toString(source.offset()));
        put(headers, SOURCE_TIMESTAMP, Long.toString(source.timestamp()));
        put(headers, SERVICE_VERSION, serviceVersion);
        put(headers, FAILED_AT, at.toString());
        byte[] key = source.key();
        if (key != null && key.length > MAX_KEY_BYTES) {
            put(headers, KEY_LENGTH, Integer.toString(key.length));
            key = Arrays.copyOf(key, MAX_KEY_BYTES);
        }
        return new ProducerRecord<>(dlqTopic, null, key, source.value(), headers);
    }

    private static void put(Headers headers, String key, String text) {
        String value = text;
        if (text.length() > MAX_HEADER_CHARS) {
            int cut = MAX_HEADER_CHARS - 3;
            // Never half a surrogate pair: it would reach the header as a replacement character.
            cut -= Character.isHighSurrogate(text.charAt(cut - 1)) ? 1 : 0;
            value = text.substring(0, cut) + "...";
        }
        headers.remove(key);
        headers.add(key, value.getBytes(StandardCharsets.UTF_8));
    }
}
