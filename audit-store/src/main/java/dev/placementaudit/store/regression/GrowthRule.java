package dev.placementaudit.store.regression;

import dev.placementaudit.core.placement.ByteSizes;

/**
 * Growth that counts as a regression: more than {@code percent} % <em>and</em> more than {@code bytes} bytes. Both,
 * so that a 3 KB bias growing 50 % and a 40 GB model growing 0.1 % are both left alone.
 */
public record GrowthRule(String what, double percent, long bytes) {

    public boolean fires(long before, long after) {
        long delta = after - before;
        if (delta <= bytes) {
            return false;
        }
        return before == 0 || delta * 100.0 / before > percent;
    }

    public String describe() {
        return what + " growth > " + (percent == Math.rint(percent) ? Long.toString((long) percent) : Double.toString(percent))
                + "% and > " + ByteSizes.format(bytes);
    }
}
