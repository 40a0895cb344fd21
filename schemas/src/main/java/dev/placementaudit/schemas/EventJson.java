package dev.placementaudit.schemas;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.avro.LogicalType;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificRecord;

import java.io.IOException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The events in plain JSON, for clients that speak HTTP rather than Kafka (phones, browsers: docs/collector.md).
 *
 * <p>Not Avro's own JSON encoding, which wraps every union value in its branch's name ({@code {"string": "abc"}}): here
 * a record is an object of its fields, an optional field is its value or {@code null} (or absent, when the schema has a
 * default), an enum is its symbol, a {@code uuid} is its text, a {@code timestamp-millis} is ISO-8601 text (or, read,
 * epoch milliseconds). The mapping is derived from the current schema, so a new field needs no code here. Fields the
 * schema does not know are ignored, as Avro's reader ignores a newer writer's fields.
 */
public final class EventJson {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    static {
        AvroTrust.install();
    }

    private EventJson() {
    }

    /** A JSON value that does not fit the schema, with the path of the field that does not (e.g. {@code tensors[3].shape}). */
    public static final class MalformedEventException extends RuntimeException {
        private final String field;

        MalformedEventException(String field, String message) {
            super((field.isEmpty() ? "" : field + ": ") + message);
            this.field = field;
        }

        public String field() {
            return field;
        }
    }

    /**
     * The event of type {@code type} whose JSON {@code parser} is positioned at (its first token, or just before it), read
     * token by token against the schema: no tree is built, which is most of the cost of reading a large event (a load of a
     * 1B model is 46 KB of JSON). On success the parser is left on the event's last token; on a
     * {@link MalformedEventException} somewhere inside it.
     */
    @SuppressWarnings("unchecked")
    public static <T extends SpecificRecord> T read(JsonParser parser, Class<T> type) throws IOException {
        Schema schema = EventType.of(type).currentSchema();
        if (parser.currentToken() == null) {
            parser.nextToken();
        }
        return (T) stream(parser, schema, "", SpecificData.getForClass(type));
    }

    private static Object stream(JsonParser p, Schema schema, String path, SpecificData model) throws IOException {
        JsonToken token = p.currentToken();
        if (token == JsonToken.VALUE_NULL) {
            if (schema.getType() == Schema.Type.NULL || (schema.isUnion() && schema.isNullable())) {
                return null;
            }
            throw new MalformedEventException(path, "is required");
        }
        LogicalType logical = schema.getLogicalType();
        if (logical != null && "uuid".equals(logical.getName())) {
            String text = streamText(p, path);
            try {
                return UUID.fromString(text);
            } catch (IllegalArgumentException e) {
                throw new MalformedEventException(path, "'" + text + "' is not a UUID");
            }
        }
        if (logical instanceof LogicalTypes.TimestampMillis) {
            if (token == JsonToken.VALUE_NUMBER_INT && p.getNumberType() != JsonParser.NumberType.BIG_INTEGER) {
                return Instant.ofEpochMilli(p.getLongValue());
            }
            String text = streamText(p, path);
            try {
                return Instant.parse(text);
            } catch (DateTimeParseException e) {
                throw new MalformedEventException(path, "'" + text + "' is not an ISO-8601 instant such as 2026-12-04T10:00:00Z");
            }
        }
        return switch (schema.getType()) {
            case RECORD -> streamRecord(p, schema, path, model);
            case UNION -> stream(p, nonNull(schema, path), path, model);
            case ARRAY -> {
                if (token != JsonToken.START_ARRAY) {
                    throw new MalformedEventException(path, "is not an array");
                }
                List<Object> values = new ArrayList<>();
                Schema items = schema.getElementType();
                for (int i = 0; p.nextToken() != JsonToken.END_ARRAY; i++) {
                    values.add(stream(p, items, path + "[" + i + "]", model));
                }
                yield values;
            }
            case MAP -> {
                if (token != JsonToken.START_OBJECT) {
                    throw new MalformedEventException(path, "is not an object");
                }
                Map<String, Object> map = new LinkedHashMap<>();
                for (String key = p.nextFieldName(); key != null; key = p.nextFieldName()) {
                    p.nextToken();
                    map.put(key, stream(p, schema.getValueType(), path + "." + key, model));
                }
                yield map;
            }
            case ENUM -> {
                String symbol = streamText(p, path);
                if (!schema.hasEnumSymbol(symbol)) {
                    throw new MalformedEventException(path, "'" + symbol + "' is not one of " + schema.getEnumSymbols());
                }
                yield model.createEnum(symbol, schema);
            }
            case STRING -> streamText(p, path);
            case LONG -> {
                if (token != JsonToken.VALUE_NUMBER_INT || p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
                    throw new MalformedEventException(path, "'" + shown(p) + "' is not a whole number");
                }
                yield p.getLongValue();
            }
            case INT -> {
                if (token != JsonToken.VALUE_NUMBER_INT || p.getNumberType() != JsonParser.NumberType.INT) {
                    throw new MalformedEventException(path, "'" + shown(p) + "' is not a whole number of at most 2^31");
                }
                yield p.getIntValue();
            }
            case BOOLEAN -> {
                if (!token.isBoolean()) {
                    throw new MalformedEventException(path, "'" + shown(p) + "' is not true or false");
                }
                yield token == JsonToken.VALUE_TRUE;
            }
            case DOUBLE, FLOAT -> {
                if (!token.isNumeric()) {
                    throw new MalformedEventException(path, "'" + shown(p) + "' is not a number");
                }
                yield schema.getType() == Schema.Type.FLOAT ? (Object) p.getFloatValue() : (Object) p.getDoubleValue();
            }
            default -> throw new MalformedEventException(path, "the schema's " + schema.getType() + " has no JSON form here");
        };
    }

    private static Object streamRecord(JsonParser p, Schema schema, String path, SpecificData model) throws IOException {
        if (p.currentToken() != JsonToken.START_OBJECT) {
            throw new MalformedEventException(path, "is not an object");
        }
        Object record = model.newRecord(null, schema);
        List<Schema.Field> fields = schema.getFields();
        boolean[] given = new boolean[fields.size()];
        for (String name = p.nextFieldName(); name != null; name = p.nextFieldName()) {
            p.nextToken();
            Schema.Field field = schema.getField(name);
            if (field == null) {
                p.skipChildren();
                continue;
            }
            model.setField(record, field.name(), field.pos(), stream(p, field.schema(), path.isEmpty() ? name : path + "." + name, model));
            given[field.pos()] = true;
        }
        for (Schema.Field field : fields) {
            if (!given[field.pos()]) {
                String fieldPath = path.isEmpty() ? field.name() : path + "." + field.name();
                Object value;
                if (field.hasDefaultValue()) {
                    value = model.deepCopy(field.schema(), model.getDefaultValue(field));
                } else if (field.schema().isNullable()) {
                    value = null;
                } else {
                    throw new MalformedEventException(fieldPath, "is required");
                }
                model.setField(record, field.name(), field.pos(), value);
            }
        }
        return record;
    }

    private static String streamText(JsonParser p, String path) throws IOException {
        if (p.currentToken() != JsonToken.VALUE_STRING) {
            throw new MalformedEventException(path, "'" + shown(p) + "' is not text");
        }
        return p.getText();
    }

    /** The current value as the tree reader's messages show it: text quoted, anything else as written. */
    private static String shown(JsonParser p) throws IOException {
        JsonToken token = p.currentToken();
        if (token == JsonToken.VALUE_STRING) {
            return "\"" + p.getText() + "\"";
        }
        return token.isStructStart() ? (token == JsonToken.START_OBJECT ? "{...}" : "[...]") : p.getText();
    }

    /** {@code event} as JSON, the form {@link #read(JsonParser, Class)} takes back. */
    public static ObjectNode write(SpecificRecord event) {
        return (ObjectNode) json(event, event.getSchema());
    }

    private static Schema nonNull(Schema union, String path) {
        List<Schema> branches = union.getTypes().stream().filter(s -> s.getType() != Schema.Type.NULL).toList();
        if (branches.size() != 1) {
            throw new MalformedEventException(path, "a union of " + branches.size() + " kinds has no JSON form here");
        }
        return branches.get(0);
    }

    private static JsonNode json(Object value, Schema schema) {
        if (value == null) {
            return NODES.nullNode();
        }
        return switch (schema.getType()) {
            case RECORD -> {
                ObjectNode object = NODES.objectNode();
                SpecificRecord record = (SpecificRecord) value;
                for (Schema.Field field : schema.getFields()) {
                    object.set(field.name(), json(record.get(field.pos()), field.schema()));
                }
                yield object;
            }
            case UNION -> json(value, nonNull(schema, ""));
            case ARRAY -> {
                ArrayNode array = NODES.arrayNode();
                for (Object item : (Collection<?>) value) {
                    array.add(json(item, schema.getElementType()));
                }
                yield array;
            }
            case MAP -> {
                ObjectNode object = NODES.objectNode();
                ((Map<?, ?>) value).forEach((key, item) -> object.set(key.toString(), json(item, schema.getValueType())));
                yield object;
            }
            case LONG -> value instanceof Instant instant ? NODES.textNode(instant.toString()) : NODES.numberNode((Long) value);
            case INT -> NODES.numberNode((Integer) value);
            case BOOLEAN -> NODES.booleanNode((Boolean) value);
            case DOUBLE -> NODES.numberNode((Double) value);
            case FLOAT -> NODES.numberNode((Float) value);
            default -> NODES.textNode(value.toString());
        };
    }

    /**
     * A JSON Schema (the OpenAPI 3.0 dialect) for the JSON form of {@code schema}: its named records and enums as
     * {@code #/components/schemas/NAME} references, added to {@code components}.
     */
    public static ObjectNode jsonSchema(Schema schema, ObjectNode components) {
        LogicalType logical = schema.getLogicalType();
        if (logical != null && "uuid".equals(logical.getName())) {
            return NODES.objectNode().put("type", "string").put("format", "uuid");
        }
        if (logical instanceof LogicalTypes.TimestampMillis) {
            return NODES.objectNode().put("type", "string").put("format", "date-time")
                    .put("description", "ISO-8601; epoch milliseconds are accepted too");
        }
        return switch (schema.getType()) {
            case RECORD, ENUM -> {
                if (!components.has(schema.getName())) {
                    components.putObject(schema.getName()); // placed first: a record may refer to itself
                    components.set(schema.getName(), definition(schema, components));
                }
                yield NODES.objectNode().put("$ref", "#/components/schemas/" + schema.getName());
            }
            case UNION -> {
                ObjectNode branch = jsonSchema(nonNull(schema, ""), components);
                yield branch.has("$ref") ? NODES.objectNode().put("nullable", true).set("allOf", NODES.arrayNode().add(branch))
                        : branch.put("nullable", true);
            }
            case ARRAY -> {
                ObjectNode array = NODES.objectNode().put("type", "array");
                array.set("items", jsonSchema(schema.getElementType(), components));
                yield array;
            }
            case MAP -> {
                ObjectNode map = NODES.objectNode().put("type", "object");
                map.set("additionalProperties", jsonSchema(schema.getValueType(), components));
                yield map;
            }
            case LONG -> NODES.objectNode().put("type", "integer").put("format", "int64");
            case INT -> NODES.objectNode().put("type", "integer").put("format", "int32");
            case BOOLEAN -> NODES.objectNode().put("type", "boolean");
            case DOUBLE, FLOAT -> NODES.objectNode().put("type", "number");
            default -> NODES.objectNode().put("type", "string");
        };
    }

    private static ObjectNode definition(Schema schema, ObjectNode components) {
        ObjectNode definition = NODES.objectNode();
        if (schema.getDoc() != null) {
            definition.put("description", schema.getDoc());
        }
        if (schema.getType() == Schema.Type.ENUM) {
            ArrayNode symbols = definition.put("type", "string").putArray("enum");
            schema.getEnumSymbols().forEach(symbols::add);
            return definition;
        }
        definition.put("type", "object");
        ObjectNode properties = definition.putObject("properties");
        ArrayNode required = NODES.arrayNode();
        for (Schema.Field field : schema.getFields()) {
            ObjectNode property = jsonSchema(field.schema(), components);
            if (field.doc() != null && !property.has("$ref")) {
                property.put("description", field.doc());
            }
            properties.set(field.name(), property);
            if (!field.hasDefaultValue()) {
                required.add(field.name());
            }
        }
        if (!required.isEmpty()) {
            definition.set("required", required);
        }
        return definition;
    }
}
