package dev.placementaudit.store;

import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

/**
 * When a set of gauge rows is registered again: after it changed, and, once it holds more than {@link #EAGER_ROWS}
 * rows, at most every {@link #INTERVAL_NANOS} (a scrape then sees values at most that old; a fleet's rows
 * re-registered after every batch would cost the ingest thread more than the batch). Ingest thread only.
 */
final class Republish {
    /** Up to this many rows, a set is registered again after every change. */
    static final int EAGER_ROWS = 300;
    /** Above them, at most this often. */
    static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(5);

    private boolean changed;
    private long doneAt = System.nanoTime() - INTERVAL_NANOS;

    Republish(boolean changed) {
        this.changed = changed;
    }

    void changed() {
        changed = true;
    }

    /** Whether the rows are to be registered now, counted as done when so; {@code rows} is asked only after a change. */
    boolean due(IntSupplier rows) {
        long now = System.nanoTime();
        if (!changed || (rows.getAsInt() > EAGER_ROWS && now - doneAt < INTERVAL_NANOS)) {
            return false;
        }
        doneAt = now;
        changed = false;
        return true;
    }
}
