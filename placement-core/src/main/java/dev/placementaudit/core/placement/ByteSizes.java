package dev.placementaudit.core.placement;

import java.util.Locale;

/** SKaiNET's {@code MemoryPlans.formatBytes}: binary units, GB with one decimal, MB and KB whole. */
public final class ByteSizes {
    private static final long KIB = 1024L;
    private static final long MIB = KIB * 1024;
    private static final long GIB = MIB * 1024;

    private ByteSizes() {
    }

    public static String format(long bytes) {
        long magnitude = Math.abs(bytes);
        if (magnitude >= GIB) {
            return String.format(Locale.ROOT, "%.1f GB", bytes / (double) GIB);
        }
        if (magnitude >= MIB) {
            return bytes / MIB + " MB";
        }
        if (magnitude >= KIB) {
            return bytes / KIB + " KB";
        }
        return bytes + " B";
    }
}
