package dev.placementaudit.producer.gguf;

import dev.placementaudit.core.format.DType;
import dev.placementaudit.core.format.Format;
import dev.placementaudit.core.format.Opaque;
import dev.placementaudit.events.FileFormat;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.model.StoredTensor;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/** A GGUF header as read: version, alignment, metadata (scalars as text, arrays summarised), tensor infos. */
public record GgufFile(Path path, long version, long alignment, long dataStart, long fileSize, Map<String, String> metadata,
                       List<GgufTensor> tensors, List<String> warnings) {
    public GgufFile {
        metadata = Map.copyOf(metadata);
        tensors = List.copyOf(tensors);
        warnings = List.copyOf(warnings);
    }

    public StoredModel toStoredModel() {
        List<StoredTensor> stored = tensors.stream().map(t -> new StoredTensor(t.name(), format(t), t.dims(), t.elementCount(),
                t.bytes(), OptionalLong.of(t.absoluteOffset()), t.type().isEmpty())).toList();
        String name = metadata.getOrDefault("general.name", path.getFileName().toString());
        return new StoredModel(name, FileFormat.GGUF, fileSize, Optional.empty(), metadata, stored, warnings);
    }

    private static Format format(GgufTensor tensor) {
        return tensor.type().map(type -> type.toFormat(tensor.bytes()))
                .orElseGet(() -> new Format(DType.FP32, new Opaque("GGML_TYPE_" + tensor.typeId(), tensor.bytes())));
    }
}
