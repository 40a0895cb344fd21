package dev.placementaudit.producer.model;

import dev.placementaudit.events.FileFormat;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What a model file (or a runtime) says about a model before any loader decides anything.
 *
 * @param warnings what the reader had to guess or could not vouch for (an unknown type sized by a gap, say): shown by
 *                 {@code producer explain}, so nobody audits an estimate believing it exact
 */
public record StoredModel(String name, FileFormat fileFormat, long sizeBytes, Optional<String> sha256,
                          Map<String, String> metadata, List<StoredTensor> tensors, List<String> warnings) {
    public StoredModel {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(fileFormat, "fileFormat");
        Objects.requireNonNull(sha256, "sha256");
        metadata = Map.copyOf(metadata);
        tensors = List.copyOf(tensors);
        warnings = List.copyOf(warnings);
    }

    public StoredModel(String name, FileFormat fileFormat, long sizeBytes, Optional<String> sha256, Map<String, String> metadata,
                       List<StoredTensor> tensors) {
        this(name, fileFormat, sizeBytes, sha256, metadata, tensors, List.of());
    }

    public long tensorBytes() {
        return tensors.stream().mapToLong(StoredTensor::storedBytes).sum();
    }

    public StoredModel withSha256(String hex) {
        return new StoredModel(name, fileFormat, sizeBytes, Optional.of(hex), metadata, tensors, warnings);
    }
}
