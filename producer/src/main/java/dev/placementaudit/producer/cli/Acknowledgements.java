package dev.placementaudit.producer.cli;

import dev.placementaudit.events.ModelLoaded;

import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Counts what the broker acknowledged, not what was handed to the client, so progress never claims a load that did
 * not arrive; bounds the loads in flight, and remembers the first failure so that sending stops there.
 */
final class Acknowledgements {
    private final int maxInFlight;
    private final Semaphore inFlight;
    private final AtomicLong acknowledged = new AtomicLong();
    private final AtomicLong tensors = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final AtomicReference<ModelLoaded> failedLoad = new AtomicReference<>();

    Acknowledgements(int maxInFlight) {
        this.maxInFlight = maxInFlight;
        this.inFlight = new Semaphore(maxInFlight);
    }

    /** Waits for room to send one more; false once any load has failed. */
    boolean acquireUnlessFailed() throws InterruptedException {
        if (failure.get() != null) {
            return false;
        }
        inFlight.acquire();
        return failure.get() == null;
    }

    void done(ModelLoaded load, int tensorCount, Throwable error) {
        if (error == null) {
            acknowledged.incrementAndGet();
            tensors.addAndGet(tensorCount);
        } else if (failure.compareAndSet(null, error)) {
            failedLoad.set(load);
        }
        inFlight.release();
    }

    /** Until every load sent has been acknowledged or has failed. */
    void awaitAll() throws InterruptedException {
        inFlight.acquire(maxInFlight);
        inFlight.release(maxInFlight);
    }

    long acknowledged() {
        return acknowledged.get();
    }

    long tensors() {
        return tensors.get();
    }

    Throwable failure() {
        return failure.get();
    }

    ModelLoaded failedLoad() {
        return failedLoad.get();
    }
}
