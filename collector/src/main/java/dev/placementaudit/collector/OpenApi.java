package dev.placementaudit.collector;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.schemas.EventJson;

/**
 * The collector's OpenAPI 3 document, served at {@code /openapi.json} and kept in docs/collector-openapi.json (a test
 * compares them). The events' schemas are derived from the Avro contract ({@link EventJson#jsonSchema}), so the document
 * cannot drift from what the collector accepts.
 */
public final class OpenApi {
    private static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final String TEXT = build();

    private OpenApi() {
    }

    /** The document, pretty-printed, with a final newline. */
    public static String text() {
        return TEXT;
    }

    private static String build() {
        ObjectNode doc = MAPPER.createObjectNode().put("openapi", "3.0.3");
        doc.putObject("info").put("title", "placement-audit collector").put("version", "1")
                .put("description", "Model loads and what runtimes observed, from devices that cannot hold Kafka credentials. "
                        + "Each fleet has a bearer token bound to the deployments it may write. A 202 means the broker has acknowledged "
                        + "every accepted item; retrying a batch never duplicates a load downstream. See docs/collector.md.");
        ObjectNode components = doc.putObject("components");
        components.putObject("securitySchemes").putObject("fleetToken").put("type", "http").put("scheme", "bearer");
        ObjectNode schemas = components.putObject("schemas");
        ObjectNode batch = schemas.putObject("Batch").put("type", "object")
                .put("description", "At least one item; at most collector.max.items (default 1000) in all.");
        ObjectNode properties = batch.putObject("properties");
        properties.putObject("loads").put("type", "array").set("items", EventJson.jsonSchema(ModelLoaded.getClassSchema(), schemas));
        properties.putObject("observations").put("type", "array").set("items", EventJson.jsonSchema(LoadObserved.getClassSchema(), schemas));
        schemas.set("BatchResult", batchResult());
        schemas.putObject("Error").put("type", "object").putObject("properties").putObject("error").put("type", "string");

        doc.putArray("security").addObject().putArray("fleetToken");
        ObjectNode post = doc.putObject("paths").putObject(Collector.LOADS_PATH).putObject("post")
                .put("summary", "Publish a batch of model loads and observations")
                .put("operationId", "postLoads");
        ArrayNode parameters = post.putArray("parameters");
        parameters.addObject().put("name", "Content-Encoding").put("in", "header").put("required", false)
                .put("description", "gzip, or nothing").putObject("schema").put("type", "string").putArray("enum").add("gzip").add("identity");
        ObjectNode content = post.putObject("requestBody").put("required", true).putObject("content");
        content.putObject("application/json").putObject("schema").put("$ref", "#/components/schemas/Batch");
        content.putObject(Batch.AVRO_TYPE).putObject("schema").put("type", "string").put("format", "binary")
                .put("description", "Frames of a 4-byte big-endian length and one event (ModelLoaded or LoadObserved, any released "
                        + "version) in Avro single-object encoding; a result's index is the frame's place. The schemas are in the "
                        + "schemas jar (dev/placementaudit/events/history).");
        ObjectNode responses = post.putObject("responses");
        respond(responses, "202", "Every accepted item is acknowledged by the broker; refused items say why", "BatchResult", false);
        respond(responses, "400", "Not a batch (not JSON, no loads or observations, bad gzip)", "Error", false);
        respond(responses, "401", "No token, or one no fleet has", "Error", false);
        respond(responses, "403", "An item names a deployment the token's fleet may not write; nothing was published", "Error", false);
        respond(responses, "413", "The body (as sent or inflated) or the number of items is over the collector's bound", "Error", false);
        respond(responses, "422", "Every item was refused; sending it again cannot help", "BatchResult", false);
        respond(responses, "429", "The fleet is over its rate; wait Retry-After seconds", "Error", true);
        respond(responses, "503", "The broker did not acknowledge in time, or the collector is at its in-flight bound; send the same "
                + "batch again after Retry-After seconds", "Error", true);
        ObjectNode paths = (ObjectNode) doc.get("paths");
        plain(paths, "/health", "UP (200) or DOWN (503, the broker unavailable), in JSON", "application/json");
        plain(paths, "/metrics", "Prometheus metrics (pa_collector_*)", "text/plain");
        plain(paths, "/openapi.json", "This document", "application/json");
        try {
            return MAPPER.writeValueAsString(doc) + "\n";
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static ObjectNode batchResult() {
        ObjectNode result = MAPPER.createObjectNode().put("type", "object");
        ObjectNode properties = result.putObject("properties");
        properties.putObject("accepted").put("type", "integer");
        properties.putObject("refused").put("type", "integer");
        ObjectNode item = properties.putObject("results").put("type", "array").putObject("items").put("type", "object");
        ObjectNode fields = item.putObject("properties");
        fields.putObject("kind").put("type", "string").putArray("enum").add(Batch.LOADS).add(Batch.OBSERVATIONS);
        fields.putObject("index").put("type", "integer").put("description", "the item's place in its array");
        fields.putObject("id").put("type", "string").put("nullable", true).put("description", "its load id");
        fields.putObject("status").put("type", "string").putArray("enum").add("accepted").add("refused");
        fields.putObject("code").put("type", "string").put("description", "why refused: the worker's validation code (NEGATIVE_SIZE, "
                + "SHAPE_MISMATCH, ...), MALFORMED (not the schema), UNDECODABLE (an Avro frame that is neither event), UNSTORABLE or TOO_LARGE");
        fields.putObject("field").put("type", "string").put("description", "the field at fault, e.g. tensors[3].shape");
        fields.putObject("reason").put("type", "string");
        return result;
    }

    private static void respond(ObjectNode responses, String status, String description, String schema, boolean retryAfter) {
        ObjectNode response = responses.putObject(status).put("description", description);
        if (retryAfter) {
            response.putObject("headers").putObject("Retry-After").put("description", "seconds to wait")
                    .putObject("schema").put("type", "integer");
        }
        response.putObject("content").putObject("application/json").putObject("schema").put("$ref", "#/components/schemas/" + schema);
    }

    private static void plain(ObjectNode paths, String path, String description, String type) {
        ObjectNode get = paths.putObject(path).putObject("get");
        get.putArray("security");
        get.putObject("responses").putObject("200").put("description", description).putObject("content").putObject(type);
    }

    /** Writes the document to standard output: how docs/collector-openapi.json is made. */
    public static void main(String[] args) {
        System.out.print(text());
    }
}
