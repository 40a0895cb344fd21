package dev.placementaudit.schemas;

import org.apache.avro.AvroRuntimeException;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DatumReader;
import org.apache.avro.io.DatumWriter;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.Encoder;
import org.apache.avro.io.EncoderFactory;
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
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Kafka serde for one event type in Avro single-object encoding ({@code C3 01}, 8-byte CRC-64-AVRO fingerprint,
 * body). Writes with the current schema; reads any released version of this event, resolving it to the current
 * one, because replay reads events written long before the reader was built. Thread-safe.
 *
 * <p>The header is written and parsed here, and the body goes through Avro's buffered {@link BinaryEncoder} and
 * array-backed {@link BinaryDecoder}: the same bytes as Avro's
 * {@code BinaryMessageEncoder}/{@code Decoder} (EventSerdeTest compares them), but those always use Avro's
 * <em>direct</em> coders, one stream call per varint byte, which made encoding a third of the worker's CPU.
 */
public final class EventSerde<T extends SpecificRecord> implements Serde<T>, Serializer<T>, Deserializer<T> {
    private static final SchemaStore.Cache ALL_VERSIONS;
    static final int HEADER_BYTES = 10;

    static {
        AvroTrust.install();
        ALL_VERSIONS = SchemaHistory.storeOfAllVersions();
    }

    /** Per-thread buffer and coders, reused: the store decodes every decision, and the simulator encodes loads in bulk. */
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private final EventType type;
    private final SpecificData model;
    private final byte[] header;
    private final DatumWriter<T> writer;
    /** One resolving reader per writer schema met so far; the current schema's is created up front. */
    private final Map<Long, DatumReader<T>> readers = new ConcurrentHashMap<>();

    @SuppressWarnings("unchecked")
    private EventSerde(Class<T> recordClass) {
        this.type = EventType.of(recordClass);
        this.model = SpecificData.getForClass(recordClass);
        // The generated per-field coders are several times faster than Avro's reflective path, but opt-in. Classes
        // whose schema has logical types have none and stay on the reflective path either way.
        model.setCustomCoders(true);
        Schema current = type.currentSchema();
        this.header = ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN)
                .put((byte) 0xC3).put((byte) 0x01).putLong(fingerprint(current)).array();
        this.writer = (DatumWriter<T>) model.createDatumWriter(current);
        readers.put(fingerprint(current), (DatumReader<T>) model.createDatumReader(current, current));
    }

    public static <T extends SpecificRecord> EventSerde<T> of(Class<T> recordClass) {
        return new EventSerde<>(recordClass);
    }

    public EventType type() {
        return type;
    }

    public byte[] encode(T event) {
        return encode(out -> writer.write(event, out));
    }

    /** A record body written field by field, in the current schema's order, by {@link #encode(Body)}'s caller. */
    @FunctionalInterface
    public interface Body {
        void writeTo(Encoder out) throws IOException;
    }

    /**
     * A record whose body the caller writes itself, for a hot path that knows its fields better than the generic
     * writer (the worker's DecisionEncoder): the header, this thread's buffer and a failure mid-record are handled
     * as for {@link #encode(SpecificRecord)}. What the body writes is not checked against the schema here; the
     * caller's tests compare its bytes with {@code encode}'s. The body must not itself encode with an EventSerde:
     * it would write into the same per-thread buffer.
     */
    public byte[] encode(Body body) {
        Scratch scratch = SCRATCH.get();
        boolean encoded = false;
        try {
            scratch.buffer.reset();
            scratch.buffer.write(header);
            body.writeTo(scratch.encoder);
            scratch.encoder.flush();
            encoded = true;
            return scratch.buffer.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot encode " + type.schemaName(), e);
        } catch (AvroRuntimeException | NullPointerException | ClassCastException e) {
            throw new SerializationException("cannot encode " + type.schemaName() + ": " + e.getMessage(), e);
        } finally {
            if (!encoded) {
                scratch.discard();
            }
        }
    }

    /**
     * A record whose body is these pieces, already encoded, in the current schema's field order: the header and each
     * piece copied once into the record's bytes, with no encoder between (the worker's decisions, assembled from the
     * parts of them it encoded once per load or per layout). As for {@link #encode(Body)}, the caller's tests compare
     * its bytes with {@code encode}'s.
     */
    public byte[] concatenate(byte[]... pieces) {
        int length = HEADER_BYTES;
        for (byte[] piece : pieces) {
            length += piece.length;
        }
        byte[] record = new byte[length];
        System.arraycopy(header, 0, record, 0, HEADER_BYTES);
        int at = HEADER_BYTES;
        for (byte[] piece : pieces) {
            System.arraycopy(piece, 0, record, at, piece.length);
            at += piece.length;
        }
        return record;
    }

    /** True when {@code bytes} start with the header this serde writes: single-object encoded with the current schema. */
    boolean writtenWithCurrentSchema(byte[] bytes) {
        return bytes != null && bytes.length >= HEADER_BYTES && Arrays.equals(bytes, 0, HEADER_BYTES, header, 0, HEADER_BYTES);
    }

    /**
     * @throws UndecodableEventException with the cause that a dead-letter record reports
     */
    public T decode(byte[] bytes) {
        if (bytes == null || bytes.length < HEADER_BYTES || bytes[0] != (byte) 0xC3 || bytes[1] != (byte) 0x01) {
            throw new UndecodableEventException(UndecodableEventException.Cause.NOT_SINGLE_OBJECT_ENCODED,
                    "not an Avro single-object encoded " + type.schemaName() + ": " + describe(bytes), null);
        }
        long fingerprint = ByteBuffer.wrap(bytes, 2, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
        Schema writerSchema = ALL_VERSIONS.findByFingerprint(fingerprint);
        if (writerSchema == null) {
            throw new UndecodableEventException(UndecodableEventException.Cause.UNKNOWN_SCHEMA_FINGERPRINT,
                    "no released schema has fingerprint " + hex(fingerprint) + " (" + type.schemaName()
                            + " knows " + type.history().size() + " versions)", null);
        }
        if (!writerSchema.getFullName().equals(type.currentSchema().getFullName())) {
            throw new UndecodableEventException(UndecodableEventException.Cause.WRONG_EVENT_TYPE,
                    "expected " + type.schemaName() + " but the record was written as " + writerSchema.getName(), null);
        }
        try {
            Scratch scratch = SCRATCH.get();
            scratch.decoder = DecoderFactory.get().binaryDecoder(bytes, HEADER_BYTES, bytes.length - HEADER_BYTES, scratch.decoder);
            return readerFor(fingerprint, writerSchema).read(null, scratch.decoder);
        } catch (IOException | RuntimeException e) {
            throw new UndecodableEventException(UndecodableEventException.Cause.CORRUPT_BODY,
                    type.schemaName() + " body of " + (bytes.length - HEADER_BYTES) + " bytes does not decode under schema "
                            + hex(fingerprint) + ": " + e, e);
        }
    }

    @SuppressWarnings("unchecked")
    private DatumReader<T> readerFor(long fingerprint, Schema writerSchema) {
        return readers.computeIfAbsent(fingerprint, f -> (DatumReader<T>) model.createDatumReader(writerSchema, type.currentSchema()));
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
    public void configure(Map<String, ?> configs, boolean isKey) {
        // nothing to configure: the schema history ships in this jar
    }

    @Override
    public void close() {
        // nothing to release: encoder and decoder hold only thread-local buffers
    }

    /** One thread's output buffer with the buffered encoder that flushes into it, and its decoder. */
    private static final class Scratch {
        final ByteArrayOutputStream buffer = new ByteArrayOutputStream(1024);
        final BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(buffer, null);
        BinaryDecoder decoder;

        /**
         * After a failed encode: the encoder buffers, so part of the broken record may still sit in it, and would
         * otherwise open the next record written on this thread. Flushed into the buffer, it goes with the rest.
         */
        void discard() {
            try {
                encoder.flush();
            } catch (IOException e) {
                throw new UncheckedIOException("a ByteArrayOutputStream cannot fail", e);
            }
            buffer.reset();
        }
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
