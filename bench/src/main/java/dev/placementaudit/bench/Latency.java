package dev.placementaudit.bench;

import java.util.ArrayList;
import java.util.List;

/** A query's latency as the store benches time it: in the query API's own process, after a warm-up. */
final class Latency {
    interface Query {
        void run() throws Exception;
    }

    /** Calls timed per query, after the warm-up calls. */
    static final int MEASURED = 200;
    /**
     * Calls before those timed: the API serves from a long-running process, and a fresh JVM compiles the query path
     * (the driver's row parsing, the fleet view's grouping) over its first calls, about 70 of the fleet view's.
     */
    static final int WARM_UP = 100;

    /** p50, p95, p99 and max of the timed calls, then the median of the warm-up calls, in milliseconds. */
    static double[] time(Query query) throws Exception {
        List<Double> millis = new ArrayList<>();
        List<Double> warmUp = new ArrayList<>();
        for (int i = 0; i < WARM_UP + MEASURED; i++) {
            long t = System.nanoTime();
            query.run();
            (i < WARM_UP ? warmUp : millis).add((System.nanoTime() - t) / 1e6);
        }
        double[] sorted = millis.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return new double[]{sorted[sorted.length / 2], sorted[(int) (sorted.length * 0.95)], sorted[(int) (sorted.length * 0.99)],
                sorted[sorted.length - 1], StoreBench.median(warmUp)};
    }

    private Latency() {
    }
}
