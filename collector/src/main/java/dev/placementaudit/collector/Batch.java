package dev.placementaudit.collector;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.resolution.InvalidLoadException;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.resolution.ObservationCheck;
import dev.placementaudit.schemas.EventJson;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.schemas.LoadLayouts;
import dev.placementaudit.schemas.UndecodableEventException;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * One {@code POST /v1/loads} body, read item by item: {@code {"loads": [ModelLoaded...], "observations": [LoadObserved...]}}.
 * Each item is accepted or refused on its own (an invalid load never fails its batch-mates), with the worker's own
 * validation ({@link LoadValidator}) and the store's check of an observation, so a device hears now what would otherwise
 * reach a dead-letter topic it cannot read.
 */
final class Batch {
    static final String LOADS = "loads";
    static final String OBSERVATIONS = "observations";

    /** One item of the batch and what became of it so far: its event encoded when valid. */
    record Item(String kind, int index, String id, String deploymentId, byte[] encoded, String code, String field, String reason) {
        boolean valid() {
            return encoded != null;
        }

        Item refused(String refusal, String refusedField, String why) {
            return new Item(kind, index, id, deploymentId, null, refusal, refusedField, why);
        }
    }

    /** A body that is not a batch at all: a 400, nothing published. */
    static final class BadBatchException extends RuntimeException {
        BadBatchException(String message) {
            super(message);
        }
    }

    /** More items than {@code collector.max.items}: a 413. */
    static final class TooManyItemsException extends RuntimeException {
        TooManyItemsException(String message) {
            super(message);
        }
    }

    private final List<Item> items;

    private Batch(List<Item> items) {
        this.items = items;
    }

    List<Item> items() {
        return items;
    }

    /**
     * Reads the batch from {@code body} one item at a time, each encoded as soon as it is checked: what is held is the
     * items' Avro bytes, not the body's JSON tree (a hundred loads of a 1B model are 6 MB of JSON and several times that as
     * a tree).
     */
    static Batch read(ObjectMapper mapper, InputStream body, int maxItems, LoadValidator validator)
            throws IOException {
        List<Item> items = new ArrayList<>();
        try (JsonParser parser = mapper.getFactory().createParser(body)) {
            if (parser.nextToken() != JsonToken.START_OBJECT) {
                throw new BadBatchException("the body is not a JSON object with \"loads\" and/or \"observations\" arrays");
            }
            for (JsonToken token = parser.nextToken(); token == JsonToken.FIELD_NAME; token = parser.nextToken()) {
                String name = parser.currentName();
                JsonToken value = parser.nextToken();
                if (!name.equals(LOADS) && !name.equals(OBSERVATIONS) || value == JsonToken.VALUE_NULL) {
                    parser.skipChildren();
                    continue;
                }
                if (value != JsonToken.START_ARRAY) {
                    throw new BadBatchException("\"" + name + "\" is not an array");
                }
                int index = 0;
                while (parser.nextToken() != JsonToken.END_ARRAY) {
                    if (items.size() == maxItems) {
                        throw new TooManyItemsException("more than collector.max.items=" + maxItems + " items in one batch: send smaller batches");
                    }
                    items.add(name.equals(LOADS) ? load(parser, index++, validator) : observation(parser, index++));
                }
            }
        } catch (JsonProcessingException e) {
            throw new BadBatchException("the body is not JSON: " + e.getOriginalMessage());
        }
        if (items.isEmpty()) {
            throw new BadBatchException("the batch holds no loads and no observations");
        }
        return new Batch(items);
    }

    /** A batch of Avro events: what JVM and native runtimes send (docs/collector.md), like OTLP's binary protobuf beside its JSON. */
    static final String AVRO_TYPE = "application/vnd.placement-audit.batch+avro";
    private static final EventSerde<ModelLoaded> LOAD_SERDE = EventSerde.of(ModelLoaded.class);
    private static final EventSerde<LoadObserved> OBSERVATION_SERDE = EventSerde.of(LoadObserved.class);

    /**
     * Reads a binary batch: frames of a 4-byte big-endian length and an event in Avro single-object encoding (a
     * {@code ModelLoaded} or a {@code LoadObserved}, any released version; the header's fingerprint says which). A valid
     * event is published as the device encoded it: nothing is decoded into JSON or encoded again, so this is the cheap
     * path. {@code index} in the results is the frame's place in the body.
     */
    static Batch readAvro(InputStream body, int maxItems, LoadValidator validator, LoadLayouts layouts) throws IOException {
        DataInputStream in = new DataInputStream(body);
        List<Item> items = new ArrayList<>();
        for (long length = nextFrame(in); length >= 0; length = nextFrame(in)) {
            if (items.size() == maxItems) {
                throw new TooManyItemsException("more than collector.max.items=" + maxItems + " items in one batch: send smaller batches");
            }
            if (length == 0 || length > MAX_FRAME) {
                throw new BadBatchException("frame " + items.size() + " says " + length + " bytes: not a batch of length-prefixed events");
            }
            byte[] event = new byte[(int) length];
            try {
                in.readFully(event);
            } catch (EOFException e) {
                throw new BadBatchException("frame " + items.size() + " is cut short: " + length + " bytes announced");
            }
            items.add(avroItem(event, items.size(), validator, layouts));
        }
        if (items.isEmpty()) {
            throw new BadBatchException("the batch holds no loads and no observations");
        }
        return new Batch(items);
    }

    /** No single event is larger than the body bound anyway; this only refuses a length that is plainly not one. */
    private static final int MAX_FRAME = 256 << 20;

    /** The next frame's length (unsigned), or -1 at the end of the body. */
    private static long nextFrame(DataInputStream in) throws IOException {
        int first = in.read();
        if (first < 0) {
            return -1;
        }
        try {
            return ((long) first << 24) | (in.readUnsignedByte() << 16) | (in.readUnsignedByte() << 8) | in.readUnsignedByte();
        } catch (EOFException e) {
            throw new BadBatchException("the body ends inside a frame's length");
        }
    }

    /**
     * A frame's load is read with {@code layouts}: a load of a model and policy checked before (a fleet's every load but
     * its first) has only what is its own decoded and checked, the rest is the remembered layout (#28).
     */
    private static Item avroItem(byte[] event, int index, LoadValidator validator, LoadLayouts layouts) {
        try {
            LoadLayouts.Read read = layouts.read(event);
            if (read.known()) {
                return checked(read.load(), index, validator::checkAllButTheLayout, event);
            }
            Item item = checked(read.load(), index, validator::validate, event);
            if (item.valid()) {
                read.remember();
            }
            return item;
        } catch (UndecodableEventException notALoad) {
            if (notALoad.reason() != UndecodableEventException.Cause.WRONG_EVENT_TYPE) {
                return new Item(LOADS, index, null, null, null, null, null, null).refused("UNDECODABLE", "", notALoad.getMessage());
            }
        }
        try {
            return checked(OBSERVATION_SERDE.decode(event), index, event);
        } catch (UndecodableEventException e) {
            return new Item(OBSERVATIONS, index, null, null, null, null, null, null).refused("UNDECODABLE", "",
                    "neither a ModelLoaded nor a LoadObserved: " + e.getMessage());
        }
    }

    /**
     * A load checked as the worker checks it; valid, it is held as {@code sent} (the device's Avro bytes) or, read from
     * JSON ({@code sent} null), encoded now.
     */
    private static Item checked(ModelLoaded load, int index, Consumer<ModelLoaded> check, byte[] sent) {
        Item item = new Item(LOADS, index, load.getLoadId().toString(), load.getDeployment().getId(), null, null, null, null);
        try {
            check.accept(load);
        } catch (InvalidLoadException e) {
            return item.refused(e.code().name(), e.field(), e.getMessage());
        }
        return new Item(LOADS, index, item.id(), item.deploymentId(), sent != null ? sent : LOAD_SERDE.encode(load), null, null, null);
    }

    /** An observation checked as the store checks it; held like a load. */
    private static Item checked(LoadObserved observed, int index, byte[] sent) {
        Item item = new Item(OBSERVATIONS, index, observed.getLoadId().toString(), observed.getDeploymentId(), null, null, null, null);
        String problem = ObservationCheck.problem(observed);
        if (problem != null) {
            return item.refused("UNSTORABLE", "deploymentId", "cannot store the observation of load " + observed.getLoadId() + ": " + problem);
        }
        return new Item(OBSERVATIONS, index, item.id(), item.deploymentId(), sent != null ? sent : OBSERVATION_SERDE.encode(observed), null, null, null);
    }

    /** The first deployment {@code fleet} may not write, if any item names one. */
    Optional<Item> forbiddenTo(Fleet fleet) {
        return items.stream().filter(item -> item.deploymentId() != null && !fleet.mayWrite(item.deploymentId())).findFirst();
    }

    private static Item load(JsonParser parser, int index, LoadValidator validator) throws IOException {
        JsonToken start = parser.currentToken();
        JsonStreamContext array = start.isStructStart() ? parser.getParsingContext().getParent() : parser.getParsingContext();
        try {
            return checked(EventJson.read(parser, ModelLoaded.class), index, validator::validate, null);
        } catch (EventJson.MalformedEventException e) {
            skipRest(parser, array, start);
            return new Item(LOADS, index, null, null, null, null, null, null).refused("MALFORMED", e.field(), e.getMessage());
        }
    }

    private static Item observation(JsonParser parser, int index) throws IOException {
        JsonToken start = parser.currentToken();
        JsonStreamContext array = start.isStructStart() ? parser.getParsingContext().getParent() : parser.getParsingContext();
        try {
            return checked(EventJson.read(parser, LoadObserved.class), index, null);
        } catch (EventJson.MalformedEventException e) {
            skipRest(parser, array, start);
            return new Item(OBSERVATIONS, index, null, null, null, null, null, null).refused("MALFORMED", e.field(), e.getMessage());
        }
    }

    /**
     * After an item that does not fit its schema, on to its end, so the next item is read from its start: the reader
     * stopped somewhere inside it. {@code array} is the context the item sits in, {@code start} the item's first token.
     */
    private static void skipRest(JsonParser parser, JsonStreamContext array, JsonToken start) throws IOException {
        if (start == null || !start.isStructStart()) {
            return;
        }
        while (!(parser.getParsingContext() == array && parser.currentToken() != null && parser.currentToken().isStructEnd())) {
            if (parser.nextToken() == null) {
                throw new BadBatchException("the body ends inside an item");
            }
        }
    }
}
