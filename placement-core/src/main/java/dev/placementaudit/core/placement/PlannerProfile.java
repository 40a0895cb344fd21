package dev.placementaudit.core.placement;

import java.util.List;
import java.util.Objects;

/**
 * A named set of planning choices (SKaiNET {@code PlannerProfile}). Placement reads only {@code weightsMapped},
 * {@code strict} and {@code offHeapThresholdBytes}; the rest travels along so an audit shows the whole profile.
 */
public record PlannerProfile(String name, long reserveBytes, int prefillChunk, KvCacheMode kvMode,
                             double kvAutoQuantizeAbove, long offHeapThresholdBytes, double dequantWarnShare,
                             boolean strict, boolean weightsMapped) {
    public static final long OFF_HEAP_THRESHOLD = 262_144L;
    public static final long RESERVE_ANDROID_JVM = 734_003_200L;
    public static final long RESERVE_NATIVE = 314_572_800L;
    public static final int DEFAULT_PREFILL_CHUNK = 256;
    public static final long MOBILE_RAM_CEILING = 3_221_225_472L;

    public static final PlannerProfile MOBILE_2GB = new PlannerProfile("mobile-2gb", RESERVE_ANDROID_JVM,
            DEFAULT_PREFILL_CHUNK, KvCacheMode.BF16, 0.80, OFF_HEAP_THRESHOLD, 0.05, true, true);
    /** Reserve must stay 0: the caller passes usable RAM. */
    public static final PlannerProfile EDGE = new PlannerProfile("edge", 0, DEFAULT_PREFILL_CHUNK, KvCacheMode.BF16,
            0.80, OFF_HEAP_THRESHOLD, 0.05, false, true);
    public static final PlannerProfile DESKTOP = new PlannerProfile("desktop", RESERVE_ANDROID_JVM,
            DEFAULT_PREFILL_CHUNK, KvCacheMode.BF16, 1.0, OFF_HEAP_THRESHOLD, 0.05, false, false);
    public static final PlannerProfile NATIVE = new PlannerProfile("native", RESERVE_NATIVE, DEFAULT_PREFILL_CHUNK,
            KvCacheMode.BF16, 1.0, OFF_HEAP_THRESHOLD, 0.05, false, false);

    public static final List<PlannerProfile> NAMED = List.of(MOBILE_2GB, EDGE, DESKTOP, NATIVE);

    public PlannerProfile {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(kvMode, "kvMode");
        if (reserveBytes < 0) {
            throw new IllegalArgumentException("profile '" + name + "': reserveBytes must be >= 0, was " + reserveBytes);
        }
        if (prefillChunk <= 0) {
            throw new IllegalArgumentException("profile '" + name + "': prefillChunk must be > 0, was " + prefillChunk);
        }
        if (!(kvAutoQuantizeAbove > 0)) {
            throw new IllegalArgumentException("profile '" + name + "': kvAutoQuantizeAbove must be > 0, was " + kvAutoQuantizeAbove);
        }
        if (offHeapThresholdBytes <= 0) {
            throw new IllegalArgumentException("profile '" + name + "': offHeapThresholdBytes must be > 0, was " + offHeapThresholdBytes);
        }
    }

    /** A named profile, or its strict variant when the name ends in {@code " (strict)"}. */
    public static PlannerProfile byName(String name) {
        String base = name.endsWith(STRICT_SUFFIX) ? name.substring(0, name.length() - STRICT_SUFFIX.length()) : name;
        for (PlannerProfile profile : NAMED) {
            if (profile.name.equals(base)) {
                return base.equals(name) ? profile : profile.asStrict();
            }
        }
        throw new IllegalArgumentException("unknown profile '" + name + "'; expected one of mobile-2gb, edge, desktop, native");
    }

    private static final String STRICT_SUFFIX = " (strict)";

    /** SKaiNET {@code forDevice}: 3 GiB of RAM or less plans as a phone. */
    public static PlannerProfile forDevice(long totalRamBytes) {
        return totalRamBytes <= MOBILE_RAM_CEILING ? MOBILE_2GB : DESKTOP;
    }

    /** The threshold itself goes off-heap; zero bytes stay on the heap. */
    public MemoryDomain domainFor(long bytes) {
        return bytes >= offHeapThresholdBytes ? MemoryDomain.HOST_OFFHEAP : MemoryDomain.HOST_HEAP;
    }

    public long budget(long availableBytes) {
        return Math.max(0, availableBytes - reserveBytes);
    }

    public PlannerProfile asStrict() {
        return strict ? this : new PlannerProfile(name + STRICT_SUFFIX, reserveBytes, prefillChunk, kvMode,
                kvAutoQuantizeAbove, offHeapThresholdBytes, dequantWarnShare, true, weightsMapped);
    }

    public PlannerProfile withWeightsMapped(boolean mapped) {
        return new PlannerProfile(name, reserveBytes, prefillChunk, kvMode, kvAutoQuantizeAbove,
                offHeapThresholdBytes, dequantWarnShare, strict, mapped);
    }

    public PlannerProfile withOffHeapThreshold(long thresholdBytes) {
        return new PlannerProfile(name, reserveBytes, prefillChunk, kvMode, kvAutoQuantizeAbove, thresholdBytes,
                dequantWarnShare, strict, weightsMapped);
    }
}
