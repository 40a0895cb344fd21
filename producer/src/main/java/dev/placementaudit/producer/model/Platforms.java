package dev.placementaudit.producer.model;

import dev.placementaudit.core.format.TensorEncodings;
import dev.placementaudit.core.placement.KernelCapabilities;
import dev.placementaudit.core.placement.StorageCapabilities;

import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/** Named platforms (SKaiNET's PlatformStorage actuals) and kernel sets, as the CLI and simulator name them. */
public final class Platforms {
    private static final Map<String, StorageCapabilities> NAMED = Map.of(
            "jvm", StorageCapabilities.FULL,
            "android", StorageCapabilities.FULL,
            "native", StorageCapabilities.FULL,
            "nomap", StorageCapabilities.NO_MAPPING,
            "js", StorageCapabilities.HEAP_ONLY,
            "wasm", StorageCapabilities.HEAP_ONLY,
            "browser", StorageCapabilities.HEAP_ONLY);

    private Platforms() {
    }

    public static StorageCapabilities byName(String name) {
        StorageCapabilities caps = NAMED.get(name.toLowerCase(Locale.ROOT));
        if (caps == null) {
            throw new IllegalArgumentException("unknown platform '" + name + "'; expected one of "
                    + NAMED.keySet().stream().sorted().collect(Collectors.joining(", ")));
        }
        return caps;
    }

    /** {@code all}, {@code dense-only}, or a comma-separated list of encodings the kernels read (dense always). */
    public static KernelCapabilities kernels(String spec) {
        return switch (spec.trim().toLowerCase(Locale.ROOT)) {
            case "all" -> KernelCapabilities.EVERYTHING;
            case "dense-only", "dense" -> KernelCapabilities.DENSE_ONLY;
            default -> KernelCapabilities.feeding(Arrays.stream(spec.split(",")).map(String::trim).filter(s -> !s.isEmpty())
                    .map(TensorEncodings::parseKnown).collect(Collectors.toSet()));
        };
    }
}
