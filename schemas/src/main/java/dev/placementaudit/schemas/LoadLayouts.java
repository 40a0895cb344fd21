package dev.placementaudit.schemas;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.PlatformCapabilities;
import dev.placementaudit.events.ProfileSettings;
import dev.placementaudit.events.TensorInfo;
import org.apache.avro.Schema;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DatumReader;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.specific.SpecificData;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.CRC32C;

/**
 * Reads {@code ModelLoaded} events in single-object encoding, decoding a layout once per distinct run of bytes.
 *
 * <p>A load's platform, profile and tensors (its layout: what placement reads) sit side by side in the record, and every
 * load of one model file under one policy repeats them byte for byte: 10 KB of a 1B model's 146 tensors, where the rest
 * of the load is a few hundred bytes. Decoding those tensors and checking them was all the collector's CPU on its Avro
 * path (#28: decoding 47%, the worker's validation 52%). So a caller that has checked a load's layout may
 * {@linkplain #remember remember} it; a later event whose layout bytes are the same is then read by decoding only the
 * fields around them, and shares the remembered (decoded, checked) platform, profile and tensor objects, which nobody
 * may change. Everything else about the event is decoded by Avro's own readers, field by field.
 *
 * <p>An event written with another schema version than the current one, one whose layout is not remembered, or one
 * that does not walk cleanly is decoded whole by {@link EventSerde#decode} as before, with its errors: this only makes
 * a known layout cheaper, never a different event. Thread-safe.
 */
public final class LoadLayouts {
    private static final int HEADER_BYTES = 10;
    private static final EventSerde<ModelLoaded> SERDE = EventSerde.of(ModelLoaded.class);
    private static final Schema SCHEMA = ModelLoaded.getClassSchema();
    private static final long CURRENT = EventSerde.fingerprint(SCHEMA);
    private static final int FIRST = SCHEMA.getField("platform").pos();
    private static final int LAST = SCHEMA.getField("tensors").pos();
    private static final int FIELDS = SCHEMA.getFields().size();
    private static final SpecificData MODEL = SpecificData.getForClass(ModelLoaded.class);

    /** One reader per field outside the layout, with the generated class's conversions (a load id is a UUID). */
    private static final DatumReader<?>[] READERS = new DatumReader<?>[FIELDS];

    static {
        if (LAST - FIRST != 2 || SCHEMA.getField("profile").pos() != FIRST + 1) {
            // The layout must be one run of bytes; LoadLayoutsTest fails here first if a schema version moves a field.
            throw new ExceptionInInitializerError("ModelLoaded's platform, profile and tensors are no longer adjacent: " + SCHEMA.getFields());
        }
        for (int field = 0; field < FIELDS; field++) {
            if (field < FIRST || field > LAST) {
                READERS[field] = MODEL.createDatumReader(SCHEMA.getFields().get(field).schema());
            }
        }
    }

    /** How many layouts are remembered at most; past it the memory starts over (a fleet runs a handful). */
    private final int capacity;
    private final Map<Key, Layout> known = new ConcurrentHashMap<>();
    private static final ThreadLocal<BinaryDecoder[]> DECODER = ThreadLocal.withInitial(() -> new BinaryDecoder[1]);

    public LoadLayouts(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1, was " + capacity);
        }
        this.capacity = capacity;
    }

    /** An event read: the load, and whether its layout was a remembered one (shared objects, checked before). */
    public static final class Read {
        private final ModelLoaded load;
        private final boolean known;
        private final byte[] event;
        private final int layoutStart;
        private final int layoutEnd;

        private Read(ModelLoaded load, boolean known, byte[] event, int layoutStart, int layoutEnd) {
            this.load = load;
            this.known = known;
            this.event = event;
            this.layoutStart = layoutStart;
            this.layoutEnd = layoutEnd;
        }

        public ModelLoaded load() {
            return load;
        }

        /** True when the layout's bytes were those of a remembered layout, whose objects this load shares. */
        public boolean known() {
            return known;
        }
    }

    /**
     * @throws UndecodableEventException as {@link EventSerde#decode} throws it
     */
    public Read read(byte[] event) {
        if (event == null || event.length < HEADER_BYTES || event[0] != (byte) 0xC3 || event[1] != (byte) 0x01
                || ByteBuffer.wrap(event, 2, 8).order(ByteOrder.LITTLE_ENDIAN).getLong() != CURRENT) {
            return new Read(SERDE.decode(event), false, event, -1, -1);
        }
        int[] starts = new int[FIELDS + 1];
        try {
            int at = HEADER_BYTES;
            for (int field = 0; field < FIELDS; field++) {
                starts[field] = at;
                at = AvroWalk.skip(SCHEMA.getFields().get(field).schema(), event, at);
            }
            starts[FIELDS] = at;
        } catch (AvroWalk.MalformedException e) {
            return new Read(SERDE.decode(event), false, event, -1, -1);
        }
        int start = starts[FIRST];
        int end = starts[LAST + 1];
        Layout layout = known.get(Key.of(event, start, end));
        if (layout == null || !Arrays.equals(layout.bytes, 0, layout.bytes.length, event, start, end)) {
            return new Read(SERDE.decode(event), false, event, start, end);
        }
        try {
            return new Read(assemble(event, starts, layout), true, event, start, end);
        } catch (IOException | RuntimeException e) {
            // The walk passed what Avro's readers refuse (a malformed load id, say): the whole decode says why.
            return new Read(SERDE.decode(event), false, event, -1, -1);
        }
    }

    /**
     * Remembers the layout of a load read here, which the caller has checked: later events with the same layout bytes
     * share its objects. A load decoded from another schema version has no layout bytes to compare, and is not remembered.
     */
    public void remember(Read read) {
        if (read.known || read.layoutStart < 0) {
            return;
        }
        if (known.size() >= capacity) {
            known.clear();
        }
        byte[] bytes = Arrays.copyOfRange(read.event, read.layoutStart, read.layoutEnd);
        ModelLoaded load = read.load;
        known.put(Key.of(bytes, 0, bytes.length), new Layout(bytes, load.getPlatform(), load.getProfile(), load.getTensors()));
    }

    /** How many layouts are remembered now (for tests). */
    int remembered() {
        return known.size();
    }

    private static ModelLoaded assemble(byte[] event, int[] starts, Layout layout) throws IOException {
        ModelLoaded load = new ModelLoaded();
        BinaryDecoder[] decoder = DECODER.get();
        for (int field = 0; field < FIELDS; field++) {
            if (field >= FIRST && field <= LAST) {
                continue;
            }
            decoder[0] = DecoderFactory.get().binaryDecoder(event, starts[field], starts[field + 1] - starts[field], decoder[0]);
            load.put(field, READERS[field].read(null, decoder[0]));
        }
        load.put(FIRST, layout.platform);
        load.put(FIRST + 1, layout.profile);
        load.put(LAST, layout.tensors);
        return load;
    }

    private record Layout(byte[] bytes, PlatformCapabilities platform, ProfileSettings profile, List<TensorInfo> tensors) {
    }

    /** A layout's bytes by their length and CRC-32C (an intrinsic: a few GB/s); a match is then compared byte for byte. */
    private record Key(int length, int crc) {
        static Key of(byte[] bytes, int from, int to) {
            CRC32C crc = new CRC32C();
            crc.update(bytes, from, to - from);
            return new Key(to - from, (int) crc.getValue());
        }
    }
}
