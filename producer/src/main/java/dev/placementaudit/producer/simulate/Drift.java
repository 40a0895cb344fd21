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
 *   <li>{@code R:threshold=BYTES} - from release R the off-heap threshold is BYTES.</li>
 * </ul>
 * Releases are compared by their position in the simulated release list.
 */
public sealed interface Drift {
    int fromRelease();

    static Drift parse(String spec, List<String> releases) {
        int colon = spec.indexOf(':');
        int equals = spec.indexOf('=');
        if (colon < 1 || equals < colon) {
            throw new IllegalArgumentException("drift '" + spec + "' must look like r2:dequantize=*ffn_down*, r2:unservable=Q6_K or r2:threshold=1048576");
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
            default -> throw new IllegalArgumentException("drift kind '" + kind + "' is not dequantize, unservable or threshold");
        };
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
