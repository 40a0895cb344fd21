package dev.placementaudit.producer.simulate;

import dev.placementaudit.core.format.DType;
import dev.placementaudit.core.format.TensorEncoding;
import dev.placementaudit.core.format.TensorEncodings;
import dev.placementaudit.core.placement.EncodingRequest;
import dev.placementaudit.core.placement.PlannerProfile;
import dev.placementaudit.core.placement.StorageCapabilities;
import dev.placementaudit.core.placement.WeightForm;

import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * A change a release makes to how models load, the kind that silently moves bytes:
 * <ul>
 *   <li>{@code R:dequantize=GLOB} - from release R, tensors matching GLOB are dequantized to FP32 at load (a kernel
 *       was dropped): they lose their mapping and grow ~4-8x, off-heap;</li>
 *   <li>{@code R:unservable=ENC} - from release R the loader no longer serves ENC from a mapping;</li>
 *   <li>{@code R:threshold=BYTES} - from release R the off-heap threshold is BYTES;</li>
 *   <li>{@code R:leak=SIZE} - from release R the runtime holds SIZE (e.g. 512MB) more off-heap than its plan, per load
 *       (observed only: needs {@code --observe});</li>
 *   <li>{@code R:diverge=GLOB} - from release R the runtime places tensors matching GLOB otherwise than the reference:
 *       off-heap where the reference maps them or keeps them on the heap, on the heap where it puts them off-heap (reported
 *       in the load and observed: needs {@code --observe}).</li>
 * </ul>
 * Releases are compared by their position in the simulated release list.
 */
public sealed interface Drift {
    int fromRelease();

    static Drift parse(String spec, List<String> releases) {
        int colon = spec.indexOf(':');
        int equals = spec.indexOf('=');
        if (colon < 1 || equals < colon) {
            throw new IllegalArgumentException("drift '" + spec + "' must look like r2:dequantize=*ffn_down*, r2:unservable=Q6_K, "
                    + "r2:threshold=1048576, r2:leak=512MB or r2:diverge=*attn_q*");
        }
        String release = spec.substring(0, colon);
        int index = releases.indexOf(release);
        if (index < 0) {
            throw new IllegalArgumentException("drift '" + spec + "' names release '" + release + "', not one of " + releases);
        }
        String kind = spec.substring(colon + 1, equals).toLowerCase(Locale.ROOT);
        String value = spec.substring(equals + 1);
        return switch (kind) {
            case "dequantize" -> new Dequantize(index, value);
            case "unservable" -> new Unservable(index, value);
            case "threshold" -> new Threshold(index, Long.parseLong(value));
            case "leak" -> new Leak(index, size(value, spec));
            case "diverge" -> new Diverge(index, value);
            default -> throw new IllegalArgumentException("drift kind '" + kind + "' is not dequantize, unservable, threshold, leak or diverge");
        };
    }

    /** A size: bytes, or a number with KB, MB, GB (binary, as SKaiNET counts). */
    static long size(String text, String spec) {
        String t = text.trim().toUpperCase(Locale.ROOT).replace("IB", "B");
        long unit = t.endsWith("GB") ? 1L << 30 : t.endsWith("MB") ? 1L << 20 : t.endsWith("KB") ? 1L << 10 : 1;
        String number = unit == 1 ? t.replaceAll("B$", "") : t.substring(0, t.length() - 2);
        try {
            long n = Long.parseLong(number.trim());
            if (n < 0) {
                throw new NumberFormatException();
            }
            return Math.multiplyExact(n, unit);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("drift '" + spec + "' needs a size such as 512MB, 2GB or 1048576, got '" + text + "'");
        }
    }

    /** Whether this drift is one only an observing runtime shows (leak, diverge). */
    default boolean observed() {
        return this instanceof Leak || this instanceof Diverge;
    }

    record Leak(int fromRelease, long bytes) implements Drift {
    }

    record Diverge(int fromRelease, String glob) implements Drift {
        public boolean matches(String tensorName) {
            return FileSystems.getDefault().getPathMatcher("glob:" + glob).matches(Path.of(tensorName));
        }
    }

    record Dequantize(int fromRelease, String glob) implements Drift {
        public boolean matches(String tensorName) {
            PathMatcher matcher = FileSystems.getDefault().getPathMatcher("glob:" + glob);
            return matcher.matches(Path.of(tensorName));
        }

        public WeightForm apply(WeightForm form) {
            return form.withEncoding(new EncodingRequest.DequantizeTo(DType.FP32));
        }
    }

    record Unservable(int fromRelease, String encoding) implements Drift {
        public StorageCapabilities apply(StorageCapabilities platform) {
            Set<TensorEncoding> servable = new HashSet<>(platform.mappedServableEncodings());
            servable.remove(TensorEncodings.parseKnown(encoding));
            return platform.withMappedServableEncodings(servable);
        }
    }

    record Threshold(int fromRelease, long bytes) implements Drift {
        public PlannerProfile apply(PlannerProfile profile) {
            return profile.withOffHeapThreshold(bytes);
        }
    }
}
