package dev.placementaudit.core.format;

import java.util.Optional;
import java.util.OptionalLong;

/**
 * How a tensor's elements are laid out in bytes. A closed set, as in SKaiNET's {@code TensorEncoding}.
 *
 * <p>{@link #label()} is SKaiNET's {@code name} (what formats render); {@link #spec()} is the unambiguous wire
 * form that {@link TensorEncodings#parse} reads back. They differ only where the label drops a parameter.
 */
public sealed interface TensorEncoding
        permits Dense, BlockQuant, PackedEncoding, TurboQuant, Opaque {

    String label();

    /** Bytes that {@code elementCount} elements occupy, or empty where the encoding needs more than a count. */
    OptionalLong physicalBytes(long elementCount);

    Optional<BlockSpec> blockSpec();

    default String spec() {
        return label();
    }

    /** {@code ceil(n / blockSize) * bytesPerBlock}, the rule every block encoding shares. */
    static long blockBytes(long elementCount, long blockSize, long bytesPerBlock) {
        if (elementCount < 0) {
            throw new IllegalArgumentException("elementCount must be >= 0, was " + elementCount);
        }
        long blocks = elementCount / blockSize + (elementCount % blockSize == 0 ? 0 : 1);
        return Math.multiplyExact(blocks, bytesPerBlock);
    }
}
