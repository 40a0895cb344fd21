package dev.placementaudit.core.placement;

import dev.placementaudit.core.format.Format;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A resolved placement plus everything needed to say why. The rendered reason is computed from these fields
 * alone, so the code and the text cannot drift apart (STYLE.md 6).
 *
 * @param mappingBlockers every reason a requested mapping was refused, in explain order; empty when the
 *                        tensor is mapped or no mapping was asked for
 * @param placement       MAPPED_OK, or the fallback that picked heap vs off-heap
 * @param runtimeReason   why a runtime with rules of its own (llama.cpp) put it there, in that policy's words: then the
 *                        reason text; null for SKaiNET's rules, whose text is made from the codes
 */
public record AllocationDecision(String tensorName, Format storedFormat, AllocationSpec spec, long residentBytes,
                                 boolean mappingRequested, List<ReasonCode> mappingBlockers, ReasonCode placement,
                                 long offHeapThresholdBytes, boolean offHeapSupported, String runtimeReason) {
    /** A decision under SKaiNET's rules. */
    public AllocationDecision(String tensorName, Format storedFormat, AllocationSpec spec, long residentBytes, boolean mappingRequested,
                              List<ReasonCode> mappingBlockers, ReasonCode placement, long offHeapThresholdBytes, boolean offHeapSupported) {
        this(tensorName, storedFormat, spec, residentBytes, mappingRequested, mappingBlockers, placement, offHeapThresholdBytes,
                offHeapSupported, null);
    }

    public AllocationDecision {
        Objects.requireNonNull(tensorName, "tensorName");
        Objects.requireNonNull(storedFormat, "storedFormat");
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(placement, "placement");
        mappingBlockers = List.copyOf(mappingBlockers);
        if (placement.kind() != ReasonCode.Kind.PLACEMENT) {
            throw new IllegalArgumentException(placement + " is not a placement reason");
        }
        if (placement.placementDomain() != spec.domain()) {
            throw new IllegalArgumentException(placement + " cannot place into " + spec.domain());
        }
        // A loop, not a stream: a worker builds one decision per tensor of every load.
        for (ReasonCode blocker : mappingBlockers) {
            if (blocker.kind() != ReasonCode.Kind.MAPPING_BLOCKER) {
                throw new IllegalArgumentException("not all mapping blockers: " + mappingBlockers);
            }
        }
    }

    public MemoryDomain domain() {
        return spec.domain();
    }

    public ScopeKind scope() {
        return spec.scope();
    }

    public Format residentFormat() {
        return spec.format();
    }

    /** The reason SKaiNET's explain would give: the first blocker, else the placement. */
    public ReasonCode primaryReason() {
        return mappingBlockers.isEmpty() ? placement : mappingBlockers.get(0);
    }

    public Optional<ReasonCode> mappingBlocker() {
        return mappingBlockers.stream().findFirst();
    }

    /** The "why" part: every blocker, then the placement clause; a runtime's own reason when it has rules of its own. */
    public String reasonText() {
        if (runtimeReason != null) {
            return runtimeReason;
        }
        List<String> clauses = new ArrayList<>();
        for (ReasonCode blocker : mappingBlockers) {
            clauses.add(blockerClause(blocker));
        }
        clauses.add(placementClause());
        return String.join("; ", clauses);
    }

    /** {@code <name>: <DOMAIN>/<SCOPE> — <why>}, the shape of SKaiNET's explain. */
    public String explanation() {
        return tensorName + explanationTail(reasonText());
    }

    /**
     * What follows the name, {@code : <DOMAIN>/<SCOPE> — <why>}, around a "why" rendered for a decision with an
     * equal {@link #reasonKey()}: the domain and scope are part of the key, so equal keys have equal tails.
     */
    String explanationTail(String why) {
        return ": " + spec.domain() + "/" + spec.scope() + " \u2014 " + why;
    }

    /**
     * Every component but the tensor's name: decisions with equal keys have equal {@link #reasonText()}s, so
     * {@link Explanations} renders each once. All of them, not only those the text reads today, so that a clause
     * added later cannot make two different reasons share a text (AllocationDecisionTest checks the components).
     */
    ReasonKey reasonKey() {
        return new ReasonKey(storedFormat, spec, residentBytes, mappingRequested, mappingBlockers, placement,
                offHeapThresholdBytes, offHeapSupported, runtimeReason);
    }

    record ReasonKey(Format storedFormat, AllocationSpec spec, long residentBytes, boolean mappingRequested,
                     List<ReasonCode> mappingBlockers, ReasonCode placement, long offHeapThresholdBytes,
                     boolean offHeapSupported, String runtimeReason) {
    }

    private String blockerClause(ReasonCode blocker) {
        return switch (blocker) {
            case PLATFORM_CANNOT_MAP -> "mapping asked, but this platform cannot map files";
            case REENCODED_AT_LOAD -> "mapping asked, but it is re-encoded at load (" + storedFormat + " -> "
                    + spec.format() + "); a copy cannot page from the file";
            case KERNEL_FEED_COPY -> "mapping asked, but kernel-feed order is a load-time copy of the file's bytes";
            case ENCODING_NOT_MAPPABLE -> "mapping asked, but no loader/kernel serves " + storedFormat.encoding().label()
                    + " from a mapping yet; staged in memory";
            default -> throw new IllegalStateException(blocker + " is not a mapping blocker");
        };
    }

    private String placementClause() {
        if (placement == ReasonCode.MAPPED_OK) {
            return "mapped read-only: the resident bytes are the file's bytes, paged in and out by the OS";
        }
        String clause = "resident " + ByteSizes.format(residentBytes) + " vs off-heap threshold "
                + ByteSizes.format(offHeapThresholdBytes) + switch (placement) {
                    case BELOW_THRESHOLD -> ": below, kept on the heap";
                    case ABOVE_THRESHOLD -> ": at or above, kept off the managed heap";
                    default -> ": at or above, but kept on the heap";
                };
        return offHeapSupported ? clause : clause + " (no off-heap on this platform)";
    }
}
