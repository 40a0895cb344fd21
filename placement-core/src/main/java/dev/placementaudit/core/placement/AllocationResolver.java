package dev.placementaudit.core.placement;

import dev.placementaudit.core.format.Format;

import java.util.ArrayList;
import java.util.List;

/**
 * SKaiNET's {@code AllocationResolver} (#1192): a pure function from (held form x profile x platform) to a
 * placement. Nothing here allocates; the loader carries the answer out, the audit records it.
 */
public final class AllocationResolver {
    /** The rule set ported; stamped on every decision so an audit can tell rule changes from policy changes. */
    public static final String RULES_VERSION = "skainet-1192";

    private AllocationResolver() {
    }

    /** Weights live until the model closes and are never written, whatever their residency. */
    public static AllocationDecision resolve(PlanTensor weight, PlannerProfile profile, StorageCapabilities platform) {
        List<ReasonCode> blockers = mappingBlockers(weight, platform);
        WeightForm form = weight.form();
        ReasonCode placement = form.asksForMapping() && blockers.isEmpty()
                ? ReasonCode.MAPPED_OK
                : fallback(weight.residentBytes(), profile, platform);
        AllocationSpec spec = new AllocationSpec(weight.residentFormat(), weight.elementCount(),
                placement.placementDomain(), ScopeKind.MODEL, false, AllocationSpec.DEFAULT_ALIGNMENT);
        return new AllocationDecision(weight.name(), weight.format(), spec, weight.residentBytes(),
                form.asksForMapping(), blockers, placement, profile.offHeapThresholdBytes(), platform.supportsOffHeap());
    }

    /** Maps only when the form asks, the platform can, the bytes are the file's bytes and a loader serves them. */
    public static boolean servesFromMapping(PlanTensor weight, StorageCapabilities platform) {
        return weight.form().asksForMapping() && mappingBlockers(weight, platform).isEmpty();
    }

    /** A re-encoding or a kernel-feed permutation produces a copy, and a copy cannot page from the file. */
    public static boolean fileBytesAreTheBytes(WeightForm form) {
        return form.keepsStoredEncoding() && form.order() == WeightByteOrder.AS_STORED;
    }

    /**
     * Activations and scratch: priced by their format (or dtype width when it cannot price itself), never mapped,
     * always mutable.
     */
    public static AllocationDecision resolveTransient(String name, Format format, long elementCount,
                                                      PlannerProfile profile, StorageCapabilities platform, ScopeKind scope) {
        long bytes = format.physicalBytes(elementCount)
                .orElseGet(() -> Math.multiplyExact(elementCount, (long) format.dtype().sizeInBytes()));
        ReasonCode placement = fallback(bytes, profile, platform);
        AllocationSpec spec = new AllocationSpec(format, elementCount, placement.placementDomain(), scope, true,
                AllocationSpec.DEFAULT_ALIGNMENT);
        return new AllocationDecision(name, format, spec, bytes, false, List.of(), placement,
                profile.offHeapThresholdBytes(), platform.supportsOffHeap());
    }

    public static AllocationDecision resolveTransient(String name, Format format, long elementCount,
                                                      PlannerProfile profile, StorageCapabilities platform) {
        return resolveTransient(name, format, elementCount, profile, platform, ScopeKind.FORWARD);
    }

    /** SKaiNET's explain, recomputed from {@link #resolve} so that what is printed is what is decided. */
    public static String explain(PlanTensor weight, PlannerProfile profile, StorageCapabilities platform) {
        return resolve(weight, profile, platform).explanation();
    }

    private static List<ReasonCode> mappingBlockers(PlanTensor weight, StorageCapabilities platform) {
        WeightForm form = weight.form();
        if (!form.asksForMapping()) {
            return List.of();
        }
        List<ReasonCode> blockers = new ArrayList<>(4);
        if (!platform.supportsMappedFiles()) {
            blockers.add(ReasonCode.PLATFORM_CANNOT_MAP);
        }
        if (!form.keepsStoredEncoding()) {
            blockers.add(ReasonCode.REENCODED_AT_LOAD);
        }
        if (form.order() == WeightByteOrder.KERNEL_FEED) {
            blockers.add(ReasonCode.KERNEL_FEED_COPY);
        }
        // Servability is judged on the *stored* encoding only, not the dtype (domain Q2): Dense(4) matches Int32 too.
        if (!platform.canServeFromMapping(weight.format().encoding())) {
            blockers.add(ReasonCode.ENCODING_NOT_MAPPABLE);
        }
        return blockers;
    }

    /** Size picks heap vs off-heap; a platform without off-heap keeps everything on the heap. */
    private static ReasonCode fallback(long residentBytes, PlannerProfile profile, StorageCapabilities platform) {
        if (profile.domainFor(residentBytes) == MemoryDomain.HOST_HEAP) {
            return ReasonCode.BELOW_THRESHOLD;
        }
        return platform.supportsOffHeap() ? ReasonCode.ABOVE_THRESHOLD : ReasonCode.NO_OFFHEAP_ON_PLATFORM;
    }
}
