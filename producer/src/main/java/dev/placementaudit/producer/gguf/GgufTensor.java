package dev.placementaudit.producer.gguf;

import dev.placementaudit.core.format.GgmlType;

import java.util.List;
import java.util.Optional;

/**
 * One tensor info of a GGUF file.
 *
 * @param dims          ggml order {@code ne}: fastest-varying first, {@code [in, out]} for a 2-D weight
 * @param relativeOffset from the start of the data section
 * @param bytes         priced by the type, or for an unknown type the gap to the next tensor (or the end of file)
 */
public record GgufTensor(String name, List<Long> dims, long typeId, Optional<GgmlType> type, long relativeOffset,
                         long absoluteOffset, long elementCount, long bytes) {
    public GgufTensor {
        dims = List.copyOf(dims);
    }
}
