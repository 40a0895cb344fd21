package dev.placementaudit.producer.model;

import dev.placementaudit.events.FileFormat;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/** What a model file (or a runtime) says about a model before any loader decides anything. */
public record StoredModel(String name, FileFormat fileFormat, long sizeBytes, Optional<String> sha256,
                          Map<String, String> metadata, List<StoredTensor> tensors) {
    public StoredModel {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(fileFormat, "fileFormat");
        Objects.requireNonNull(sha256, "sha256");
        metadata = Map.copyOf(metadata);
        tensors = List.copyOf(tensors);
    }

    public long tensorBytes() {
        return tensors.stream().mapToLong(StoredTensor::storedBytes).sum();
    }

    public StoredModel withSha256(String hex) {
        return new StoredModel(name, fileFormat, sizeBytes, Optional.of(hex), metadata, tensors);
    }
}
