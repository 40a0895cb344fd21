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
 * @param sizeEstimated {@code storedBytes} is a guess, not a price: the reader did not know the type (a GGUF type id
 *                      sized by the gap to the next tensor). Carried on the event, so the audit says so too.
 */
public record StoredTensor(String name, Format format, List<Long> shape, long elementCount, long storedBytes, OptionalLong fileOffset,
                           boolean sizeEstimated) {
    public StoredTensor {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(format, "format");
        shape = List.copyOf(shape);
        Objects.requireNonNull(fileOffset, "fileOffset");
    }

    /** A tensor whose type the reader knows, so its bytes are priced, not estimated. */
    public StoredTensor(String name, Format format, List<Long> shape, long elementCount, long storedBytes, OptionalLong fileOffset) {
        this(name, format, shape, elementCount, storedBytes, fileOffset, false);
    }
}
