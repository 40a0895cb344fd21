package dev.placementaudit.schemas;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class EventJsonTest {
    private final ObjectMapper mapper = new ObjectMapper();

    @Test
    void aLoadReadsBackAsTheSameEventInPlainJson() throws Exception {
        ModelLoaded load = Samples.modelLoaded();
        ObjectNode json = EventJson.write(load);
        // Plain JSON, not Avro's: an optional value is the value itself, a time and a uuid are text.
        assertThat(json.get("model").get("sha256").isTextual()).isTrue();
        assertThat(json.get("occurredAt").asText()).isEqualTo("2026-11-30T12:00:00Z");
        assertThat(json.get("loadId").asText()).isEqualTo(Samples.LOAD_ID.toString());
        assertThat(json.get("tensors").get(1).get("form").isNull()).isTrue();
        ModelLoaded back = streamed(mapper.readTree(mapper.writeValueAsString(json)), ModelLoaded.class);
        assertThat(back).isEqualTo(load);
        assertThat(EventSerde.of(ModelLoaded.class).encode(back)).isEqualTo(EventSerde.of(ModelLoaded.class).encode(load));
    }

    @Test
    void anObservationReadsBackAsTheSameEvent() throws Exception {
        LoadObserved observed = Samples.loadObserved();
        assertThat(streamed(EventJson.write(observed), LoadObserved.class)).isEqualTo(observed);
    }

    @Test
    void optionalFieldsWithDefaultsMayBeLeftOutAndUnknownFieldsAreIgnored() throws Exception {
        ObjectNode json = EventJson.write(Samples.modelLoaded());
        json.remove("labels");
        json.put("occurredAt", 1_764_504_000_000L);
        json.put("addedByANewerClient", true);
        ModelLoaded load = streamed(json, ModelLoaded.class);
        assertThat(load.getLabels()).isEmpty();
        assertThat(load.getOccurredAt().toString()).isEqualTo("2025-11-30T12:00:00Z");
    }

    @Test
    void aValueThatDoesNotFitNamesItsField() {
        ObjectNode json = EventJson.write(Samples.modelLoaded());
        ((ObjectNode) json.get("tensors").get(0)).put("storedBytes", "many");
        assertThatThrownBy(() -> streamed(json, ModelLoaded.class)).isInstanceOf(EventJson.MalformedEventException.class)
                .hasMessage("tensors[0].storedBytes: '\"many\"' is not a whole number")
                .extracting(e -> ((EventJson.MalformedEventException) e).field()).isEqualTo("tensors[0].storedBytes");
        ObjectNode missing = EventJson.write(Samples.modelLoaded());
        ((ObjectNode) missing.get("deployment")).remove("id");
        assertThatThrownBy(() -> streamed(missing, ModelLoaded.class)).hasMessage("deployment.id: is required");
        ObjectNode badEnum = EventJson.write(Samples.modelLoaded());
        ((ObjectNode) badEnum.get("model")).put("fileFormat", "ONNX");
        assertThatThrownBy(() -> streamed(badEnum, ModelLoaded.class)).hasMessageStartingWith("model.fileFormat: 'ONNX' is not one of [GGUF");
        ObjectNode badId = EventJson.write(Samples.modelLoaded());
        badId.put("loadId", "not-a-uuid");
        assertThatThrownBy(() -> streamed(badId, ModelLoaded.class)).hasMessage("loadId: 'not-a-uuid' is not a UUID");
    }

    @Test
    void readsTokenByTokenPastUnknownFieldsAndNamesTheFieldAtFault() throws Exception {
        ObjectNode json = EventJson.write(Samples.modelLoaded());
        json.put("addedByANewerClient", true);
        json.putObject("nestedUnknown").putArray("deep").add(1);
        assertThat(streamed(json, ModelLoaded.class)).isEqualTo(Samples.modelLoaded());
        assertThat(streamed(EventJson.write(Samples.loadObserved()), LoadObserved.class)).isEqualTo(Samples.loadObserved());
        ObjectNode withoutDefaults = EventJson.write(Samples.modelLoaded());
        withoutDefaults.remove("labels");
        withoutDefaults.put("occurredAt", 1_764_504_000_000L);
        ModelLoaded defaulted = streamed(withoutDefaults, ModelLoaded.class);
        assertThat(defaulted.getLabels()).isEmpty();
        assertThat(defaulted.getOccurredAt().toString()).isEqualTo("2025-11-30T12:00:00Z");

        ObjectNode bad = EventJson.write(Samples.modelLoaded());
        ((ObjectNode) bad.get("tensors").get(0)).put("storedBytes", "many");
        assertThatThrownBy(() -> streamed(bad, ModelLoaded.class)).hasMessage("tensors[0].storedBytes: '\"many\"' is not a whole number");
        ObjectNode missing = EventJson.write(Samples.modelLoaded());
        ((ObjectNode) missing.get("deployment")).remove("id");
        assertThatThrownBy(() -> streamed(missing, ModelLoaded.class)).hasMessage("deployment.id: is required");
        ObjectNode badEnum = EventJson.write(Samples.modelLoaded());
        ((ObjectNode) badEnum.get("model")).put("fileFormat", "ONNX");
        assertThatThrownBy(() -> streamed(badEnum, ModelLoaded.class)).hasMessageStartingWith("model.fileFormat: 'ONNX' is not one of [GGUF");
        ObjectNode badId = EventJson.write(Samples.modelLoaded());
        badId.put("loadId", "not-a-uuid");
        assertThatThrownBy(() -> streamed(badId, ModelLoaded.class)).hasMessage("loadId: 'not-a-uuid' is not a UUID");
    }

    private <T extends org.apache.avro.specific.SpecificRecord> T streamed(JsonNode json, Class<T> type) throws Exception {
        try (com.fasterxml.jackson.core.JsonParser parser = mapper.getFactory().createParser(mapper.writeValueAsBytes(json))) {
            return EventJson.read(parser, type);
        }
    }

    @Test
    void theJsonSchemaNamesEveryRecordAndItsRequiredFields() {
        ObjectNode components = new ObjectMapper().createObjectNode();
        JsonNode root = EventJson.jsonSchema(ModelLoaded.getClassSchema(), components);
        assertThat(root.get("$ref").asText()).isEqualTo("#/components/schemas/ModelLoaded");
        assertThat(components.has("TensorInfo")).isTrue();
        assertThat(components.get("FileFormat").get("enum")).hasSize(3);
        JsonNode loaded = components.get("ModelLoaded");
        assertThat(loaded.get("required").toString()).contains("\"loadId\"", "\"tensors\"").doesNotContain("\"labels\"");
        assertThat(loaded.get("properties").get("occurredAt").get("format").asText()).isEqualTo("date-time");
    }
}
