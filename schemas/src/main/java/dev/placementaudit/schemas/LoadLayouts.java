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
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Reads {@code ModelLoaded} events in single-object encoding, decoding a layout once per distinct run of bytes.
 *
 * <p>A load's platform, profile and tensors (its layout: what placement reads) sit side by side in the record, and every
 * load of one model file under one policy repeats them byte for byte: 10 KB of a 1B model's 146 tensors, where the rest
 * of the load is a few hundred bytes. Decoding those tensors and checking them was all the collector's CPU on its Avro
 * path (#28: decoding 47%, the worker's validation 52%). So a caller that has checked a load's layout may
 * {@linkplain Read#remember remember} it; a later event whose layout bytes are the same is then read by decoding only the
 * fields around them, and shares the remembered (decoded, checked) platform, profile and tensor objects, which nobody
 * may change. Everything else about the event is decoded by Avro's own readers, field by field. A known layout is found by
 * comparing the bytes where the layout starts with the remembered ones, not by walking it: the same bytes walk to the
 * same end, and walking 146 tensors field by field was, once decoding was gone, most of what was left.
 *
 * <p>An event written with another schema version than the current one, one whose layout is not remembered, or one
 * that does not walk cleanly is decoded whole by {@link EventSerde#decode} as before, with its errors: this only makes
 * a known layout cheaper, never a different event. Thread-safe.
 */
public final class LoadLayouts {
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
    private final Map<Probe, List<Layout>> known = new ConcurrentHashMap<>();
    private final AtomicInteger count = new AtomicInteger();

    public LoadLayouts(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1, was " + capacity);
        }
        this.capacity = capacity;
    }

    /** An event read: the load, and whether its layout was a remembered one (shared objects, checked before). */
    public final class Read {
        private final ModelLoaded load;
        /**
         * {@link #RECOGNISED} for a remembered layout; the layout's bytes for a load decoded whole under the current schema
         * (what {@link #remember} keeps); null for any other.
         */
        private final byte[] layout;

        private Read(ModelLoaded load, byte[] layout) {
            this.load = load;
            this.layout = layout;
        }

        public ModelLoaded load() {
            return load;
        }

        /** True when the layout's bytes were those of a remembered layout, whose objects this load shares. */
        public boolean known() {
            return layout == RECOGNISED;
        }

        /**
         * Remembers this load's layout, which the caller has checked: later events with the same layout bytes share its
         * objects. True when they are this load's platform, profile and tensors from now on; false for a known layout, a
         * load decoded from another schema version (no layout bytes to compare), a layout shorter than the probe (a few
         * bytes decode as fast as they compare), or one another thread remembered first.
         */
        public boolean remember() {
            return LoadLayouts.this.remember(this);
        }
    }

    /**
     * @throws UndecodableEventException as {@link EventSerde#decode} throws it
     */
    public Read read(byte[] event) {
        byte[] unknownLayout = null;
        if (SERDE.writtenWithCurrentSchema(event)) {
            int[] starts = new int[FIELDS + 1];
            try {
                walk(event, starts, 0, FIRST, EventSerde.HEADER_BYTES);
                int start = starts[FIRST];
                Layout layout = match(event, start);
                if (layout != null) {
                    // The same bytes walk to the same end: the layout's fields need no walking of their own.
                    walk(event, starts, LAST + 1, FIELDS, start + layout.bytes.length);
                    return new Read(assemble(event, starts, layout), RECOGNISED);
                }
                walk(event, starts, FIRST, FIELDS, start);
                unknownLayout = Arrays.copyOfRange(event, start, starts[LAST + 1]);
            } catch (AvroWalk.MalformedException | IOException | RuntimeException e) {
                // What does not walk cleanly, or what Avro's readers refuse beside a known layout (a malformed load id,
                // say): the whole decode says why, or finds it a load after all.
                unknownLayout = null;
            }
        }
        return new Read(SERDE.decode(event), unknownLayout);
    }

    /** Walks fields {@code from} (starting at {@code at}) to {@code to}, noting where each starts and where the last ends. */
    private static void walk(byte[] event, int[] starts, int from, int to, int at) throws AvroWalk.MalformedException {
        for (int field = from; field < to; field++) {
            starts[field] = at;
            at = AvroWalk.skip(SCHEMA.getFields().get(field).schema(), event, at);
        }
        starts[to] = at;
    }

    /** The remembered layout whose bytes the event holds at {@code start}, if any. */
    private Layout match(byte[] event, int start) {
        if (event.length - start < PROBE_BYTES) {
            return null;
        }
        for (Layout layout : known.getOrDefault(Probe.of(event, start), List.of())) {
            int end = start + layout.bytes.length;
            if (end <= event.length && Arrays.equals(layout.bytes, 0, layout.bytes.length, event, start, end)) {
                return layout;
            }
        }
        return null;
    }

    private boolean remember(Read read) {
        byte[] bytes = read.layout;
        if (bytes == null || bytes == RECOGNISED || bytes.length < PROBE_BYTES) {
            return false;
        }
        if (count.get() >= capacity) {
            known.clear();
            count.set(0);
        }
        ModelLoaded load = read.load;
        Layout layout = new Layout(bytes, load.getPlatform(), load.getProfile(), load.getTensors());
        List<Layout> now = known.compute(Probe.of(bytes, 0), (probe, layouts) -> {
            if (layouts != null && layouts.stream().anyMatch(other -> Arrays.equals(other.bytes, bytes))) {
                return layouts;
            }
            count.incrementAndGet();
            List<Layout> more = new ArrayList<>(layouts == null ? List.of() : layouts);
            more.add(layout);
            return List.copyOf(more);
        });
        return now.stream().anyMatch(kept -> kept == layout);
    }

    /** How many layouts are remembered now (for tests). */
    int remembered() {
        return count.get();
    }

    private static ModelLoaded assemble(byte[] event, int[] starts, Layout layout) throws IOException {
        ModelLoaded load = new ModelLoaded();
        BinaryDecoder decoder = null;
        for (int field = 0; field < FIELDS; field++) {
            if (field >= FIRST && field <= LAST) {
                continue;
            }
            decoder = DecoderFactory.get().binaryDecoder(event, starts[field], starts[field + 1] - starts[field], decoder);
            load.put(field, READERS[field].read(null, decoder));
        }
        load.put(FIRST, layout.platform);
        load.put(FIRST + 1, layout.profile);
        load.put(LAST, layout.tensors);
        return load;
    }

    private record Layout(byte[] bytes, PlatformCapabilities platform, ProfileSettings profile, List<TensorInfo> tensors) {
    }

    /**
     * A layout's first 16 bytes: what the event at a layout's start is looked up by, before its bytes are compared whole
     * (loads of one platform and profile share them; the first tensor's name tells their layouts apart within a few bytes).
     */
    private record Probe(long first, long second) {
        static Probe of(byte[] bytes, int at) {
            return new Probe((long) LONG.get(bytes, at), (long) LONG.get(bytes, at + 8));
        }
    }

    private static final int PROBE_BYTES = 16;
    /** What a read of a remembered layout holds for its layout's bytes: none of its own. */
    private static final byte[] RECOGNISED = new byte[0];
    private static final VarHandle LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
}
