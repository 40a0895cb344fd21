package dev.placementaudit.core.placement;

import dev.placementaudit.core.format.Dense;
import dev.placementaudit.core.format.TensorEncoding;

import java.util.Set;

/** Which stored encodings the runtime's matmul kernels read directly; the rest must be dequantized at load. */
@FunctionalInterface
public interface KernelCapabilities {
    KernelCapabilities DENSE_ONLY = encoding -> encoding instanceof Dense;
    KernelCapabilities EVERYTHING = encoding -> true;

    boolean canFeedMatmul(TensorEncoding encoding);

    /** Packed kernels prefer input-block-major order for block encodings they read. */
    default boolean wantsKernelFeedOrder(TensorEncoding encoding) {
        return encoding.blockSpec().isPresent() && canFeedMatmul(encoding);
    }

    /** Dense always, plus the given encodings. */
    static KernelCapabilities feeding(Set<? extends TensorEncoding> encodings) {
        Set<TensorEncoding> fed = Set.copyOf(encodings);
        return encoding -> encoding instanceof Dense || fed.contains(encoding);
    }
}
