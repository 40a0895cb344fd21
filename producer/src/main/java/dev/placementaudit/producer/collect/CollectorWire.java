package dev.placementaudit.producer.collect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.schemas.EventJson;
import dev.placementaudit.schemas.EventSerde;
import org.apache.avro.specific.SpecificRecord;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.GZIPOutputStream;

/** What goes over the wire to a collector and back: a batch's body as {@code POST /v1/loads} takes it, and its answer read. */
final class CollectorWire {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final EventSerde<ModelLoaded> LOADS = EventSerde.of(ModelLoaded.class);
    private static final EventSerde<LoadObserved> OBSERVATIONS = EventSerde.of(LoadObserved.class);

    private CollectorWire() {
    }

    /** The collector's answer to a delivered batch: how many it accepted, and each refused item with its reason. */
    static CollectorClient.Delivery delivery(String body) throws IOException {
        JsonNode answer = MAPPER.readTree(body);
        List<CollectorClient.Refusal> refused = new ArrayList<>();
        for (JsonNode result : answer.path("results")) {
            if ("refused".equals(result.path("status").asText())) {
                refused.add(new CollectorClient.Refusal(result.path("kind").asText(), result.path("index").asInt(), result.path("id").asText(null),
                        result.path("code").asText(), result.path("field").asText(null), result.path("reason").asText()));
            }
        }
        return new CollectorClient.Delivery(answer.path("accepted").asInt(), refused, 0, 0);
    }

    /** The collector's {@code error} of a refused batch, or the body as it came. */
    static String error(String body) {
        try {
            return MAPPER.readTree(body).path("error").asText(body);
        } catch (IOException e) {
            return body;
        }
    }

    /** The batch, gzip: frames of a length and an Avro event, or a JSON object of two arrays. */
    static byte[] body(List<SpecificRecord> events, CollectorClient.Format format) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream zip = new GZIPOutputStream(out)) {
            if (format == CollectorClient.Format.AVRO) {
                DataOutputStream frames = new DataOutputStream(zip);
                for (SpecificRecord event : events) {
                    byte[] encoded = event instanceof ModelLoaded load ? LOADS.encode(load) : OBSERVATIONS.encode((LoadObserved) event);
                    frames.writeInt(encoded.length);
                    frames.write(encoded);
                }
                frames.flush();
            } else {
                ObjectNode batch = MAPPER.createObjectNode();
                ArrayNode loads = batch.putArray("loads");
                ArrayNode observed = batch.putArray("observations");
                for (SpecificRecord event : events) {
                    (event instanceof ModelLoaded ? loads : observed).add(EventJson.write(event));
                }
                MAPPER.writeValue(zip, batch);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }
}
