package dev.placementaudit.collector;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.resolution.InvalidLoadException;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.resolution.ObservationCheck;
import dev.placementaudit.schemas.EventJson;
import org.apache.avro.specific.SpecificRecord;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

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
    static Batch read(ObjectMapper mapper, InputStream body, int maxItems, LoadValidator validator, Function<SpecificRecord, byte[]> encoder)
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
                    JsonNode json = mapper.readTree(parser);
                    items.add(name.equals(LOADS) ? load(json, index++, validator, encoder) : observation(json, index++, encoder));
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

    /** The first deployment {@code fleet} may not write, if any item names one. */
    Optional<Item> forbiddenTo(Fleet fleet) {
        return items.stream().filter(item -> item.deploymentId() != null && !fleet.mayWrite(item.deploymentId())).findFirst();
    }

    private static Item load(JsonNode json, int index, LoadValidator validator, Function<SpecificRecord, byte[]> encoder) {
        Item item = new Item(LOADS, index, text(json, "loadId"), text(json.path("deployment"), "id"), null, null, null, null);
        try {
            ModelLoaded load = EventJson.read(json, ModelLoaded.class);
            validator.validate(load);
            return new Item(LOADS, index, load.getLoadId().toString(), load.getDeployment().getId(), encoder.apply(load), null, null, null);
        } catch (EventJson.MalformedEventException e) {
            return item.refused("MALFORMED", e.field(), e.getMessage());
        } catch (InvalidLoadException e) {
            return item.refused(e.code().name(), e.field(), e.getMessage());
        }
    }

    private static Item observation(JsonNode json, int index, Function<SpecificRecord, byte[]> encoder) {
        Item item = new Item(OBSERVATIONS, index, text(json, "loadId"), text(json, "deploymentId"), null, null, null, null);
        try {
            LoadObserved observed = EventJson.read(json, LoadObserved.class);
            String problem = ObservationCheck.problem(observed);
            if (problem != null) {
                return item.refused("UNSTORABLE", "deploymentId", "cannot store the observation of load " + observed.getLoadId() + ": " + problem);
            }
            return new Item(OBSERVATIONS, index, observed.getLoadId().toString(), observed.getDeploymentId(), encoder.apply(observed), null, null, null);
        } catch (EventJson.MalformedEventException e) {
            return item.refused("MALFORMED", e.field(), e.getMessage());
        }
    }

    private static String text(JsonNode json, String field) {
        JsonNode node = json == null ? null : json.get(field);
        return node != null && node.isTextual() ? node.textValue() : null;
    }
}
