package dev.placementaudit.collector;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.resolution.InvalidLoadException;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.resolution.ObservationCheck;
import dev.placementaudit.schemas.EventJson;
import org.apache.avro.specific.SpecificRecord;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * One {@code POST /v1/loads} body, read item by item: {@code {"loads": [ModelLoaded...], "observations": [LoadObserved...]}}.
 * Each item is accepted or refused on its own (an invalid load never fails its batch-mates), with the worker's own
 * validation ({@link LoadValidator}) and the store's check of an observation, so a device hears now what would otherwise
 * reach a dead-letter topic it cannot read.
 */
final class Batch {
    static final String LOADS = "loads";
    static final String OBSERVATIONS = "observations";

    /** One item of the batch and what became of it so far. */
    record Item(String kind, int index, String id, String deploymentId, SpecificRecord event, String code, String field, String reason) {
        boolean valid() {
            return event != null;
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

    static Batch read(ObjectMapper mapper, byte[] body, int maxItems, LoadValidator validator) {
        JsonNode root;
        try {
            root = mapper.readTree(body);
        } catch (JsonProcessingException e) {
            throw new BadBatchException("the body is not JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new BadBatchException("the body cannot be read: " + e.getMessage());
        }
        if (root == null || !root.isObject()) {
            throw new BadBatchException("the body is not a JSON object with \"loads\" and/or \"observations\" arrays");
        }
        JsonNode loads = array(root, LOADS);
        JsonNode observations = array(root, OBSERVATIONS);
        int count = loads.size() + observations.size();
        if (count == 0) {
            throw new BadBatchException("the batch holds no loads and no observations");
        }
        if (count > maxItems) {
            throw new TooManyItemsException(count + " items in one batch, over collector.max.items=" + maxItems + ": send smaller batches");
        }
        List<Item> items = new ArrayList<>(count);
        for (int i = 0; i < loads.size(); i++) {
            items.add(load(loads.get(i), i, validator));
        }
        for (int i = 0; i < observations.size(); i++) {
            items.add(observation(observations.get(i), i));
        }
        return new Batch(items);
    }

    /** The first deployment {@code fleet} may not write, if any item names one. */
    Optional<Item> forbiddenTo(Fleet fleet) {
        return items.stream().filter(item -> item.deploymentId() != null && !fleet.mayWrite(item.deploymentId())).findFirst();
    }

    private static JsonNode array(JsonNode root, String name) {
        JsonNode node = root.get(name);
        if (node == null || node.isNull()) {
            return JsonNodeFactory.instance.arrayNode();
        }
        if (!node.isArray()) {
            throw new BadBatchException("\"" + name + "\" is not an array");
        }
        return node;
    }

    private static Item load(JsonNode json, int index, LoadValidator validator) {
        Item item = new Item(LOADS, index, text(json, "loadId"), text(json.path("deployment"), "id"), null, null, null, null);
        try {
            ModelLoaded load = EventJson.read(json, ModelLoaded.class);
            validator.validate(load);
            return new Item(LOADS, index, load.getLoadId().toString(), load.getDeployment().getId(), load, null, null, null);
        } catch (EventJson.MalformedEventException e) {
            return item.refused("MALFORMED", e.field(), e.getMessage());
        } catch (InvalidLoadException e) {
            return item.refused(e.code().name(), e.field(), e.getMessage());
        }
    }

    private static Item observation(JsonNode json, int index) {
        Item item = new Item(OBSERVATIONS, index, text(json, "loadId"), text(json, "deploymentId"), null, null, null, null);
        try {
            LoadObserved observed = EventJson.read(json, LoadObserved.class);
            String problem = ObservationCheck.problem(observed);
            if (problem != null) {
                return item.refused("UNSTORABLE", "deploymentId", "cannot store the observation of load " + observed.getLoadId() + ": " + problem);
            }
            return new Item(OBSERVATIONS, index, observed.getLoadId().toString(), observed.getDeploymentId(), observed, null, null, null);
        } catch (EventJson.MalformedEventException e) {
            return item.refused("MALFORMED", e.field(), e.getMessage());
        }
    }

    private static String text(JsonNode json, String field) {
        JsonNode node = json == null ? null : json.get(field);
        return node != null && node.isTextual() ? node.textValue() : null;
    }
}
