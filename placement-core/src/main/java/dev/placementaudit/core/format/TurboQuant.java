package dev.placementaudit.core.format;

import java.util.OptionalLong;

/** What both TurboQuant encodings share: fixed-size blocks priced per block, and a wire form that keeps the block size. */
public sealed interface TurboQuant extends TensorEncoding permits TurboQuantPolar, TurboQuantPolarQjl {
    /** Elements per block. */
    int block();

    /** Bytes one block of {@link #block()} elements takes. */
    long bytesPerBlock();

    /** The label omits the block size, which prices the tensor; the wire form keeps it. */
    @Override
    default String spec() {
        return label() + "/" + block();
    }

    @Override
    default OptionalLong physicalBytes(long elementCount) {
        return OptionalLong.of(TensorEncoding.blockBytes(elementCount, block(), bytesPerBlock()));
    }
}
