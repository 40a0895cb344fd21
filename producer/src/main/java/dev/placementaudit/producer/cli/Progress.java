package dev.placementaudit.producer.cli;

import java.io.PrintWriter;
import java.util.Locale;

/**
 * A one-line progress bar redrawn in place on a terminal ({@code [=====>    ] 120/400 loads  1.2k/s}), or a line
 * every tenth of the way when the output is a log file, so CI logs stay readable.
 */
final class Progress {
    private static final int WIDTH = 30;

    private final PrintWriter out;
    private final String unit;
    private final long total;
    private final boolean terminal;
    private final long started = System.nanoTime();
    private long lastDraw;
    private int lastDecile = -1;

    Progress(PrintWriter out, String unit, long total) {
        this.out = out;
        this.unit = unit;
        this.total = Math.max(1, total);
        this.terminal = System.console() != null;
    }

    void update(long done, String extra) {
        long now = System.nanoTime();
        int decile = (int) (done * 10 / total);
        if (terminal) {
            if (now - lastDraw < 100_000_000L && done < total) {
                return;
            }
            lastDraw = now;
            int filled = (int) (done * WIDTH / total);
            String bar = "=".repeat(filled) + (filled < WIDTH ? ">" + " ".repeat(WIDTH - filled - 1) : "");
            out.print(String.format(Locale.ROOT, "\r[%s] %d/%d %s  %s/s  %s", bar, done, total, unit, rate(done, now), extra));
            if (done >= total) {
                out.println();
            }
        } else if (decile != lastDecile) {
            lastDecile = decile;
            out.println(String.format(Locale.ROOT, "%3d%%  %d/%d %s  %s/s  %s", decile * 10, done, total, unit, rate(done, now), extra));
        }
        out.flush();
    }

    double seconds() {
        return (System.nanoTime() - started) / 1e9;
    }

    private String rate(long done, long now) {
        double perSecond = done / Math.max(1e-9, (now - started) / 1e9);
        return perSecond >= 1000 ? String.format(Locale.ROOT, "%.1fk", perSecond / 1000) : String.format(Locale.ROOT, "%.0f", perSecond);
    }
}
