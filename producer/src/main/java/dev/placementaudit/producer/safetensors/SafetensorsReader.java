package dev.placementaudit.producer.safetensors;

import dev.placementaudit.core.format.DType;
import dev.placementaudit.core.format.Format;
import dev.placementaudit.core.format.Opaque;
import dev.placementaudit.events.FileFormat;
import dev.placementaudit.producer.model.ModelFileException;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.model.StoredTensor;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.NullNode;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Reads a safetensors header (huggingface/safetensors): an 8-byte little-endian length, then that many bytes of
 * JSON naming each tensor's dtype, shape and {@code data_offsets}. Only the header is read. Checks what the
 * reference implementation checks: tensors contiguous from 0 without holes or overlap, each exactly
 * {@code numel x dtype size} bytes, and the buffer ending exactly at the end of the file.
 */
public final class SafetensorsReader {
    /** The reference implementation's limit on the header length. */
    public static final long MAX_HEADER_BYTES = 100_000_000L;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final byte[] UTF8_BOM = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};

    private SafetensorsReader() {
    }

    public static StoredModel read(Path file) {
        try {
            return read(file, Files.size(file));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    private static StoredModel read(Path file, long fileSize) throws IOException {
        if (fileSize < 8) {
            throw new ModelFileException(file, 0, "file is " + fileSize + " bytes, too short for a safetensors header length");
        }
        Map<String, Located> fields;
        long headerLength;
        try (InputStream in = Files.newInputStream(file)) {
            byte[] length = in.readNBytes(8);
            headerLength = ByteBuffer.wrap(length).order(ByteOrder.LITTLE_ENDIAN).getLong();
            if (headerLength < 2 || headerLength > MAX_HEADER_BYTES) {
                throw new ModelFileException(file, 0, "header length " + Long.toUnsignedString(headerLength)
                        + " is outside 2.." + MAX_HEADER_BYTES + ": not a safetensors file");
            }
            if (8 + headerLength > fileSize) {
                throw new ModelFileException(file, 8, "header of " + headerLength + " bytes runs past the end of the file (" + fileSize + " bytes)");
            }
            byte[] json = in.readNBytes((int) headerLength);
            fields = fields(file, json);
        }
        long dataStart = 8 + headerLength;
        Map<String, String> metadata = new LinkedHashMap<>();
        List<Entry> entries = new ArrayList<>();
        for (Map.Entry<String, Located> field : fields.entrySet()) {
            if (field.getKey().equals("__metadata__")) {
                metadata(file, field.getValue(), metadata);
            } else {
                entries.add(entry(file, field.getKey(), field.getValue().node(), field.getValue().at()));
            }
        }
        checkLayout(file, entries, dataStart, fileSize);
        List<StoredTensor> tensors = entries.stream().map(e -> new StoredTensor(e.name, e.dtype.format(e.end - e.begin), e.shape,
                e.elements, e.end - e.begin, OptionalLong.of(dataStart + e.begin))).toList();
        String name = metadata.getOrDefault("name", file.getFileName().toString());
        return new StoredModel(name, FileFormat.SAFETENSORS, fileSize, Optional.empty(), metadata, tensors);
    }

    /**
     * The header's top-level fields, each with the byte offset of its name in the file, read as the reference reads them
     * (a UTF-8 string parsed by serde_json): no byte-order mark, nothing but whitespace after the object, and a key
     * given twice keeps its last value.
     */
    private static Map<String, Located> fields(Path file, byte[] json) throws IOException {
        if (json.length >= 3 && json[0] == UTF8_BOM[0] && json[1] == UTF8_BOM[1] && json[2] == UTF8_BOM[2]) {
            throw new ModelFileException(file, 8, "header starts with a UTF-8 byte-order mark, which safetensors does not allow");
        }
        try {
            StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(json));
        } catch (CharacterCodingException e) {
            throw new ModelFileException(file, 8, "header is not valid UTF-8", e);
        }
        Map<String, Located> fields = new LinkedHashMap<>();
        try (JsonParser parser = JSON.getFactory().createParser(json)) {
            if (parser.nextToken() != JsonToken.START_OBJECT) {
                throw new ModelFileException(file, 8, "header is not a JSON object");
            }
            while (parser.nextToken() == JsonToken.FIELD_NAME) {
                String name = parser.currentName();
                long at = 8 + parser.currentTokenLocation().getByteOffset();
                parser.nextToken();
                JsonNode value = parser.readValueAsTree();
                fields.remove(name);
                fields.put(name, new Located(value == null ? NullNode.getInstance() : value, at));
            }
            long end = 8 + parser.currentLocation().getByteOffset();
            JsonToken after;
            try {
                after = parser.nextToken();
            } catch (JsonProcessingException e) {
                after = JsonToken.NOT_AVAILABLE;
            }
            if (after != null) {
                throw new ModelFileException(file, after == JsonToken.NOT_AVAILABLE ? end : 8 + parser.currentTokenLocation().getByteOffset(),
                        "header has content after its JSON object (only spaces may pad it)");
            }
        } catch (JsonProcessingException e) {
            long at = 8 + Math.max(0, e.getLocation() == null ? 0 : e.getLocation().getByteOffset());
            throw new ModelFileException(file, at, "header is not valid JSON: " + e.getOriginalMessage(), e);
        }
        return fields;
    }

    /** A header field's value and where its name stands in the file. */
    private record Located(JsonNode node, long at) {
    }

    private static Entry entry(Path file, String name, JsonNode node, long at) {
        if (!node.isObject()) {
            throw new ModelFileException(file, at, "tensor '" + name + "' is not an object");
        }
        JsonNode dtype = node.get("dtype");
        JsonNode shape = node.get("shape");
        JsonNode offsets = node.get("data_offsets");
        if (dtype == null || !dtype.isTextual()) {
            throw new ModelFileException(file, at, "tensor '" + name + "' has no dtype");
        }
        SafetensorsDtype type = SafetensorsDtype.parse(dtype.asText()).orElseThrow(() ->
                new ModelFileException(file, at, "tensor '" + name + "' has unknown dtype '" + dtype.asText() + "'"));
        if (shape == null || !shape.isArray()) {
            throw new ModelFileException(file, at, "tensor '" + name + "' has no shape array");
        }
        List<Long> dims = new ArrayList<>();
        long elements = 1;
        for (JsonNode dim : shape) {
            if (!dim.canConvertToLong() || !dim.isIntegralNumber() || dim.asLong() < 0) {
                throw new ModelFileException(file, at, "tensor '" + name + "' has a shape entry that is not a non-negative integer: " + dim);
            }
            dims.add(dim.asLong());
            try {
                elements = Math.multiplyExact(elements, dim.asLong());
            } catch (ArithmeticException e) {
                throw new ModelFileException(file, at, "tensor '" + name + "' shape " + dims + " overflows 64 bits");
            }
        }
        if (offsets == null || !offsets.isArray() || offsets.size() != 2 || !offsets.get(0).isIntegralNumber()
                || !offsets.get(1).isIntegralNumber()) {
            throw new ModelFileException(file, at, "tensor '" + name + "' needs data_offsets [begin, end]");
        }
        long begin = offsets.get(0).asLong();
        long end = offsets.get(1).asLong();
        if (begin < 0 || end < begin) {
            throw new ModelFileException(file, at, "tensor '" + name + "' has data_offsets [" + begin + ", " + end + "]: begin must be <= end");
        }
        long bits = Math.multiplyExact(elements, (long) type.bits());
        if (bits % 8 != 0) {
            throw new ModelFileException(file, at, "tensor '" + name + "' is " + elements + " elements of " + type.bits() + "-bit " + type
                    + ": not a whole number of bytes");
        }
        long expected = bits / 8;
        if (end - begin != expected) {
            throw new ModelFileException(file, at, "tensor '" + name + "' holds " + (end - begin) + " bytes but " + type + " x " + dims
                    + " needs " + expected);
        }
        return new Entry(name, type, dims, elements, begin, end);
    }

    private static void checkLayout(Path file, List<Entry> entries, long dataStart, long fileSize) {
        List<Entry> sorted = new ArrayList<>(entries);
        sorted.sort(Comparator.comparingLong((Entry e) -> e.begin).thenComparingLong(e -> e.end));
        long expectedBegin = 0;
        for (Entry entry : sorted) {
            if (entry.begin != expectedBegin) {
                String what = entry.begin > expectedBegin ? "leaves a hole" : "overlaps the previous tensor";
                throw new ModelFileException(file, dataStart + entry.begin, "tensor '" + entry.name + "' begins at " + entry.begin + " and "
                        + what + " (expected " + expectedBegin + ")");
            }
            expectedBegin = entry.end;
        }
        if (dataStart + expectedBegin != fileSize) {
            throw new ModelFileException(file, Math.min(fileSize, dataStart + expectedBegin), "tensor data ends at byte "
                    + (dataStart + expectedBegin) + " but the file has " + fileSize + " bytes"
                    + (dataStart + expectedBegin > fileSize ? ": the file is truncated" : ": trailing bytes"));
        }
    }

    /** {@code "__metadata__": null} is no metadata, as the reference reads it (an optional map). */
    private static void metadata(Path file, Located located, Map<String, String> metadata) {
        JsonNode node = located.node();
        if (node.isNull()) {
            return;
        }
        if (!node.isObject()) {
            throw new ModelFileException(file, located.at(), "__metadata__ is not an object");
        }
        node.fields().forEachRemaining(e -> {
            if (!e.getValue().isTextual()) {
                throw new ModelFileException(file, located.at(), "__metadata__ value for '" + e.getKey() + "' is not a string");
            }
            metadata.put(e.getKey(), e.getValue().asText());
        });
    }

    private record Entry(String name, SafetensorsDtype dtype, List<Long> shape, long elements, long begin, long end) {
    }

    /** The dtypes of the safetensors format (as of its 0.6 release), with their widths in bits and SKaiNET formats. */
    enum SafetensorsDtype {
        BOOL(8, DType.UINT8), U8(8, DType.UINT8), I8(8, DType.INT8),
        F8_E5M2(8, null), F8_E4M3(8, null), F8_E8M0(8, null), F8_E4M3FNUZ(8, null), F8_E5M2FNUZ(8, null),
        F4(4, null), F6_E2M3(6, null), F6_E3M2(6, null),
        I16(16, DType.INT16), U16(16, DType.UINT16), F16(16, DType.FP16), BF16(16, DType.BF16),
        I32(32, DType.INT32), U32(32, DType.UINT32), F32(32, DType.FP32),
        F64(64, DType.FP64), I64(64, DType.INT64), U64(64, DType.UINT64), C64(64, null);

        private final int bits;
        private final DType dtype;

        SafetensorsDtype(int bits, DType dtype) {
            this.bits = bits;
            this.dtype = dtype;
        }

        int bits() {
            return bits;
        }

        /**
         * Dense of the element width. SKaiNET has no FP8, FP6, FP4 or complex dtype, so those tensors are opaque: priced
         * by the file, never mapped, rather than pretending to be integers.
         */
        Format format(long fileBytes) {
            return dtype == null ? new Format(DType.UINT8, new Opaque(name(), fileBytes)) : Format.dense(dtype);
        }

        static Optional<SafetensorsDtype> parse(String text) {
            for (SafetensorsDtype type : values()) {
                if (type.name().equals(text)) {
                    return Optional.of(type);
                }
            }
            return Optional.empty();
        }
    }
}
