package dev.placementaudit.producer.safetensors;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.placementaudit.core.format.DType;
import dev.placementaudit.core.format.Format;
import dev.placementaudit.core.format.Opaque;
import dev.placementaudit.events.FileFormat;
import dev.placementaudit.producer.model.ModelFileException;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.model.StoredTensor;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
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
    private static final ObjectMapper JSON = new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

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
        JsonNode header;
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
            try {
                header = JSON.readTree(json);
            } catch (JsonProcessingException e) {
                long at = 8 + Math.max(0, e.getLocation() == null ? 0 : e.getLocation().getByteOffset());
                throw new ModelFileException(file, at, "header is not valid JSON: " + e.getOriginalMessage(), e);
            }
        }
        if (header == null || !header.isObject()) {
            throw new ModelFileException(file, 8, "header is not a JSON object");
        }
        long dataStart = 8 + headerLength;
        Map<String, String> metadata = new LinkedHashMap<>();
        List<Entry> entries = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = header.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> field = it.next();
            if (field.getKey().equals("__metadata__")) {
                metadata(file, field.getValue(), metadata);
            } else {
                entries.add(entry(file, field.getKey(), field.getValue()));
            }
        }
        checkLayout(file, entries, dataStart, fileSize);
        List<StoredTensor> tensors = entries.stream().map(e -> new StoredTensor(e.name, e.dtype.format(e.end - e.begin), e.shape,
                e.elements, e.end - e.begin, OptionalLong.of(dataStart + e.begin))).toList();
        String name = metadata.getOrDefault("name", file.getFileName().toString());
        return new StoredModel(name, FileFormat.SAFETENSORS, fileSize, Optional.empty(), metadata, tensors);
    }

    private static Entry entry(Path file, String name, JsonNode node) {
        if (!node.isObject()) {
            throw new ModelFileException(file, 8, "tensor '" + name + "' is not an object");
        }
        JsonNode dtype = node.get("dtype");
        JsonNode shape = node.get("shape");
        JsonNode offsets = node.get("data_offsets");
        if (dtype == null || !dtype.isTextual()) {
            throw new ModelFileException(file, 8, "tensor '" + name + "' has no dtype");
        }
        SafetensorsDtype type = SafetensorsDtype.parse(dtype.asText()).orElseThrow(() ->
                new ModelFileException(file, 8, "tensor '" + name + "' has unknown dtype '" + dtype.asText() + "'"));
        if (shape == null || !shape.isArray()) {
            throw new ModelFileException(file, 8, "tensor '" + name + "' has no shape array");
        }
        List<Long> dims = new ArrayList<>();
        long elements = 1;
        for (JsonNode dim : shape) {
            if (!dim.canConvertToLong() || !dim.isIntegralNumber() || dim.asLong() < 0) {
                throw new ModelFileException(file, 8, "tensor '" + name + "' has a shape entry that is not a non-negative integer: " + dim);
            }
            dims.add(dim.asLong());
            try {
                elements = Math.multiplyExact(elements, dim.asLong());
            } catch (ArithmeticException e) {
                throw new ModelFileException(file, 8, "tensor '" + name + "' shape " + dims + " overflows 64 bits");
            }
        }
        if (offsets == null || !offsets.isArray() || offsets.size() != 2 || !offsets.get(0).isIntegralNumber()
                || !offsets.get(1).isIntegralNumber()) {
            throw new ModelFileException(file, 8, "tensor '" + name + "' needs data_offsets [begin, end]");
        }
        long begin = offsets.get(0).asLong();
        long end = offsets.get(1).asLong();
        if (begin < 0 || end < begin) {
            throw new ModelFileException(file, 8, "tensor '" + name + "' has data_offsets [" + begin + ", " + end + "]: begin must be <= end");
        }
        long expected = Math.multiplyExact(elements, type.bytes());
        if (end - begin != expected) {
            throw new ModelFileException(file, 8, "tensor '" + name + "' holds " + (end - begin) + " bytes but " + type + " x " + dims
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

    private static void metadata(Path file, JsonNode node, Map<String, String> metadata) {
        if (!node.isObject()) {
            throw new ModelFileException(file, 8, "__metadata__ is not an object");
        }
        node.fields().forEachRemaining(e -> {
            if (!e.getValue().isTextual()) {
                throw new ModelFileException(file, 8, "__metadata__ value for '" + e.getKey() + "' is not a string");
            }
            metadata.put(e.getKey(), e.getValue().asText());
        });
    }

    private record Entry(String name, SafetensorsDtype dtype, List<Long> shape, long elements, long begin, long end) {
    }

    /** The dtypes of the safetensors format, with their widths and SKaiNET formats. */
    enum SafetensorsDtype {
        BOOL(1, DType.UINT8), U8(1, DType.UINT8), I8(1, DType.INT8), F8_E5M2(1, null), F8_E4M3(1, null),
        I16(2, DType.INT16), U16(2, DType.UINT16), F16(2, DType.FP16), BF16(2, DType.BF16),
        I32(4, DType.INT32), U32(4, DType.UINT32), F32(4, DType.FP32),
        F64(8, DType.FP64), I64(8, DType.INT64), U64(8, DType.UINT64);

        private final int bytes;
        private final DType dtype;

        SafetensorsDtype(int bytes, DType dtype) {
            this.bytes = bytes;
            this.dtype = dtype;
        }

        int bytes() {
            return bytes;
        }

        /**
         * Dense of the element width. SKaiNET has no FP8 dtype, so FP8 tensors are opaque: priced by the file,
         * never mapped, rather than pretending to be an 8-bit integer.
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
