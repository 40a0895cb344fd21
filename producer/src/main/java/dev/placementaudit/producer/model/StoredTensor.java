package dev.placementaudit.producer.model;

import dev.placementaudit.core.format.Format;

import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * One tensor as a model file stores it.
 *
 * @param shape      as the file states it (GGUF: fastest-varying first; safetensors: outermost first)
 * @param fileOffset absolute offset of the first byte, when the tensor comes from a file
 */
public record StoredTensor(String name, Format format, List<Long> shape, long elementCount, long storedBytes, OptionalLong fileOffset) {
    public StoredTensor {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(format, "format");
        shape = List.copyOf(shape);
        Objects.requireNonNull(fileOffset, "fileOffset");
    }
}
