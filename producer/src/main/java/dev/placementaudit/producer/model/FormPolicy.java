package dev.placementaudit.producer.model;

import dev.placementaudit.core.placement.KernelCapabilities;
import dev.placementaudit.core.placement.PlannerProfile;
import dev.placementaudit.core.placement.StrictFormRefusedException;
import dev.placementaudit.core.placement.WeightForm;
import dev.placementaudit.core.placement.WeightFormResolver;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a deployment's loader would do with each stored tensor: SKaiNET's WeightFormResolver under the
 * deployment's profile and kernel set, with per-tensor overrides winning (#1154: what you print is what you load).
 */
public final class FormPolicy {
    private final PlannerProfile profile;
    private final KernelCapabilities kernels;
    private final boolean canProduceKernelFeedOrder;
    private final Map<String, WeightForm> overrides;

    public FormPolicy(PlannerProfile profile, KernelCapabilities kernels, boolean canProduceKernelFeedOrder,
                      Map<String, WeightForm> overrides) {
        this.profile = profile;
        this.kernels = kernels;
        this.canProduceKernelFeedOrder = canProduceKernelFeedOrder;
        this.overrides = Map.copyOf(overrides);
    }

    public FormPolicy(PlannerProfile profile, KernelCapabilities kernels) {
        this(profile, kernels, false, Map.of());
    }

    public PlannerProfile profile() {
        return profile;
    }

    /** Forms for every tensor, in order; tensors a strict profile refuses are reported all at once. */
    public Map<String, WeightForm> forms(List<StoredTensor> tensors) {
        Map<String, WeightForm> forms = new LinkedHashMap<>();
        List<String> refused = new ArrayList<>();
        for (StoredTensor tensor : tensors) {
            WeightForm override = overrides.get(tensor.name());
            if (override != null) {
                forms.put(tensor.name(), override);
                continue;
            }
            try {
                forms.put(tensor.name(), WeightFormResolver.resolve(tensor.format().encoding(), profile, kernels, canProduceKernelFeedOrder));
            } catch (StrictFormRefusedException e) {
                refused.add(tensor.name() + " (" + e.encodingLabel() + ")");
            }
        }
        if (!refused.isEmpty()) {
            throw new LoadRefusedException(profile.name(), refused);
        }
        return forms;
    }

    /** A strict profile would fail this load before it starts; nothing is published for a load that cannot happen. */
    public static final class LoadRefusedException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        private final List<String> tensors;

        LoadRefusedException(String profile, List<String> tensors) {
            super("strict profile '" + profile + "' refuses to dequantize " + tensors.size() + " tensor(s) no kernel feeds, "
                    + "so the runtime would fail this load: " + String.join(", ", tensors.subList(0, Math.min(5, tensors.size())))
                    + (tensors.size() > 5 ? " and " + (tensors.size() - 5) + " more" : ""));
            this.tensors = List.copyOf(tensors);
        }

        public List<String> tensors() {
            return tensors;
        }
    }
}
