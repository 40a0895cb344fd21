package dev.placementaudit.core.placement;

import dev.placementaudit.core.format.DType;
import dev.placementaudit.core.format.Dense;
import dev.placementaudit.core.format.TensorEncoding;

/**
 * SKaiNET's {@code WeightFormResolver}: which form a loader holds a stored weight in, given the kernels it has.
 * Placement then follows from the form; this is where a missing kernel turns into a dequantized copy.
 */
public final class WeightFormResolver {
    private WeightFormResolver() {
    }

    /**
     * @param stored                    the file's encoding
     * @param canProduceKernelFeedOrder whether the load pipeline can permute blocks; false by default, so
     *                                  KERNEL_FEED never arises unless asked for (domain Q7)
     * @throws StrictFormRefusedException when the profile is strict and no kernel feeds the encoding
     */
    public static WeightForm resolve(TensorEncoding stored, PlannerProfile profile, KernelCapabilities kernels,
                                     boolean canProduceKernelFeedOrder) {
        WeightForm base = profile.weightsMapped() ? WeightForm.AS_STORED_MAPPED : WeightForm.AS_STORED_ON_HEAP;
        if (stored instanceof Dense) {
            return base;
        }
        if (kernels.canFeedMatmul(stored)) {
            boolean feedOrder = canProduceKernelFeedOrder && kernels.wantsKernelFeedOrder(stored);
            return feedOrder ? base.withOrder(WeightByteOrder.KERNEL_FEED) : base;
        }
        if (profile.strict()) {
            throw new StrictFormRefusedException(stored, profile);
        }
        return base.withEncoding(new EncodingRequest.DequantizeTo(DType.FP32));
    }

    public static WeightForm resolve(TensorEncoding stored, PlannerProfile profile, KernelCapabilities kernels) {
        return resolve(stored, profile, kernels, false);
    }
}
