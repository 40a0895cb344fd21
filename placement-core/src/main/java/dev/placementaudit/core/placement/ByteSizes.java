package dev.placementaudit.core.placement;

import java.math.BigDecimal;
import java.math.RoundingMode;

/**
 * SKaiNET's {@code MemoryPlans.formatBytes}: binary units, GB with one decimal rounded half to even as SKaiNET does
 * (1.25 GiB prints "1.2 GB", 2.25 GiB "2.2 GB"), MB and KB whole (truncated).
 */
public final class ByteSizes {
    private static final long KIB = 1024L;
    private static final long MIB = KIB * 1024;
    private static final long GIB = MIB * 1024;

    private ByteSizes() {
    }

    public static String format(long bytes) {
        long magnitude = Math.abs(bytes);
        if (magnitude >= GIB) {
            return new BigDecimal(bytes).divide(BigDecimal.valueOf(GIB)).setScale(1, RoundingMode.HALF_EVEN).toPlainString() + " GB";
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
