package dev.placementaudit.schemas;

import org.apache.avro.AvroRuntimeException;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.message.BadHeaderException;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.avro.message.MissingSchemaException;
import org.apache.avro.message.SchemaStore;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.HexFormat;

/**
 * Kafka serde for one event type in Avro single-object encoding ({@code C3 01}, 8-byte CRC-64-AVRO fingerprint,
 * body). Writes with the current schema; reads any released version of this event, resolving it to the current
 * one, because replay reads events written long before the reader was built. Thread-safe.
 */
public final class EventSerde<T extends SpecificRecord> implements Serde<T>, Serializer<T>, Deserializer<T> {
    private static final SchemaStore.Cache ALL_VERSIONS;

    static {
        AvroTrust.install();
        ALL_VERSIONS = SchemaHistory.storeOfAllVersions();
    }

    /** One reusable buffer per thread: encode runs once per tensor on the worker's hot path. */
    private static final ThreadLocal<ByteArrayOutputStream> BUFFER = ThreadLocal.withInitial(() -> new ByteArrayOutputStream(1024));

    private final EventType type;
    private final BinaryMessageEncoder<T> encoder;
    private final BinaryMessageDecoder<T> decoder;

    private EventSerde(Class<T> recordClass) {
        this.type = EventType.of(recordClass);
        SpecificData model = SpecificData.getForClass(recordClass);
        // The generated per-field coders are several times faster than Avro's reflective path, but opt-in. Classes
        // whose schema has logical types have none and stay on the reflective path either way.
        model.setCustomCoders(true);
        Schema current = type.currentSchema();
        this.encoder = new BinaryMessageEncoder<>(model, current);
        this.decoder = new BinaryMessageDecoder<>(model, current, ALL_VERSIONS);
    }

    public static <T extends SpecificRecord> EventSerde<T> of(Class<T> recordClass) {
        return new EventSerde<>(recordClass);
    }

    public EventType type() {
        return type;
    }

    public byte[] encode(T event) {
        try {
            ByteArrayOutputStream out = BUFFER.get();
            out.reset();
            encoder.encode(event, out);
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot encode " + type.schemaName(), e);
        } catch (AvroRuntimeException | NullPointerException | ClassCastException e) {
            throw new SerializationException("cannot encode " + type.schemaName() + ": " + e.getMessage(), e);
        }
    }

    /**
     * @throws UndecodableEventException with the cause that a dead-letter record reports
     */
    public T decode(byte[] bytes) {
        if (bytes == null || bytes.length < 10 || bytes[0] != (byte) 0xC3 || bytes[1] != (byte) 0x01) {
            throw new UndecodableEventException(UndecodableEventException.Cause.NOT_SINGLE_OBJECT_ENCODED,
                    "not an Avro single-object encoded " + type.schemaName() + ": " + describe(bytes), null);
        }
        long fingerprint = ByteBuffer.wrap(bytes, 2, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
        Schema writer = ALL_VERSIONS.findByFingerprint(fingerprint);
        if (writer != null && !writer.getFullName().equals(type.currentSchema().getFullName())) {
            throw new UndecodableEventException(UndecodableEventException.Cause.WRONG_EVENT_TYPE,
                    "expected " + type.schemaName() + " but the record was written as " + writer.getName(), null);
        }
        try {
            return decoder.decode(bytes);
        } catch (MissingSchemaException e) {
            throw new UndecodableEventException(UndecodableEventException.Cause.UNKNOWN_SCHEMA_FINGERPRINT,
                    "no released schema has fingerprint " + hex(fingerprint) + " (" + type.schemaName()
                            + " knows " + type.history().size() + " versions)", e);
        } catch (BadHeaderException e) {
            throw new UndecodableEventException(UndecodableEventException.Cause.NOT_SINGLE_OBJECT_ENCODED,
                    "bad single-object header: " + e.getMessage(), e);
        } catch (IOException | RuntimeException e) {
            throw new UndecodableEventException(UndecodableEventException.Cause.CORRUPT_BODY,
                    type.schemaName() + " body of " + (bytes.length - 10) + " bytes does not decode under schema "
                            + hex(fingerprint) + ": " + e, e);
        }
    }

    /** The fingerprint single-object encoding puts in the header for this schema. */
    public static long fingerprint(Schema schema) {
        return SchemaNormalization.parsingFingerprint64(schema);
    }

    @Override
    public byte[] serialize(String topic, T data) {
        return data == null ? null : encode(data);
    }

    @Override
    public T deserialize(String topic, byte[] data) {
        return data == null ? null : decode(data);
    }

    @Override
    public Serializer<T> serializer() {
        return this;
    }

    @Override
    public Deserializer<T> deserializer() {
        return this;
    }

    @Override
    public void configure(java.util.Map<String, ?> configs, boolean isKey) {
        // nothing to configure: the schema history ships in this jar
    }

    @Override
    public void close() {
        // nothing to release: encoder and decoder hold only thread-local buffers
    }

    private static String hex(long fingerprint) {
        return HexFormat.of().toHexDigits(fingerprint);
    }

    private static String describe(byte[] bytes) {
        if (bytes == null) {
            return "null";
        }
        int shown = Math.min(bytes.length, 16);
        return bytes.length + " bytes starting " + HexFormat.ofDelimiter(" ").formatHex(bytes, 0, shown)
                + (bytes.length > shown ? " ..." : "");
    }
}
