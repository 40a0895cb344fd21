package dev.placementaudit.core.placement;

/**
 * Why a tensor landed where it did. Stable codes: they are stored, diffed across releases and alerted on, so a
 * code is never renamed or reused.
 *
 * <p>A weight gets one {@link Kind#PLACEMENT} code (mapped, or the fallback that chose heap vs off-heap) and, if a
 * mapping was asked for and refused, every {@link Kind#MAPPING_BLOCKER} that refused it, in SKaiNET's explain
 * order. SKaiNET's {@code explain} prints only the first cause; keeping all of them is deliberate (domain Q3):
 * a release that fixes one blocker but not another should not look like a no-op.
 */
public enum ReasonCode {
    MAPPED_OK(Kind.PLACEMENT),
    PLATFORM_CANNOT_MAP(Kind.MAPPING_BLOCKER),
    REENCODED_AT_LOAD(Kind.MAPPING_BLOCKER),
    KERNEL_FEED_COPY(Kind.MAPPING_BLOCKER),
    ENCODING_NOT_MAPPABLE(Kind.MAPPING_BLOCKER),
    BELOW_THRESHOLD(Kind.PLACEMENT),
    ABOVE_THRESHOLD(Kind.PLACEMENT),
    NO_OFFHEAP_ON_PLATFORM(Kind.PLACEMENT),
    /** Not a placement: a strict profile refused a silent dequantization before placement ran. */
    FORM_STRICT_REFUSED(Kind.ERROR);

    public enum Kind {
        PLACEMENT,
        MAPPING_BLOCKER,
        ERROR
    }

    private final Kind kind;

    ReasonCode(Kind kind) {
        this.kind = kind;
    }

    public Kind kind() {
        return kind;
    }

    public MemoryDomain placementDomain() {
        return switch (this) {
            case MAPPED_OK -> MemoryDomain.MMAP_FILE;
            case ABOVE_THRESHOLD -> MemoryDomain.HOST_OFFHEAP;
            case BELOW_THRESHOLD, NO_OFFHEAP_ON_PLATFORM -> MemoryDomain.HOST_HEAP;
            default -> throw new IllegalStateException(this + " is not a placement reason");
        };
    }
}
