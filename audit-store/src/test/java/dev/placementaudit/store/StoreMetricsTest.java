package dev.placementaudit.store;

import dev.placementaudit.store.ingest.BatchOutcome;
import dev.placementaudit.store.ingest.BatchPhase;
import dev.placementaudit.store.regression.LoadRef;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.lang.reflect.Proxy;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The load-bytes gauge of a large fleet: a load that replaces its release's latest shows at once (its row's values
 * change in place); a new row, once there are many, is registered at most every 5 s, and still shows within 5 s
 * when no batch follows (the ingest loop publishes what was deferred after every poll).
 */
class StoreMetricsTest {
    @Test
    void valuesChangeInPlaceAndADeferredNewRowShowsWithinFiveSecondsWithoutAnotherBatch() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        StoreMetrics metrics = new StoreMetrics(registry, unreachable());
        Instant at = Instant.parse("2026-12-01T00:00:00Z");
        List<BatchOutcome.CompletedLoad> fleet = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            fleet.add(completed("d-" + i, at, 1_000));
        }
        metrics.committed(batch(fleet));
        assertThat(registry.scrape()).contains(row("d-7", "HOST_OFFHEAP") + " 1000.0");

        metrics.committed(batch(List.of(completed("d-7", at.plusSeconds(60), 2_000))));
        assertThat(registry.scrape()).as("a later load of a row: its value, at once").contains(row("d-7", "HOST_OFFHEAP") + " 2000.0");

        metrics.committed(batch(List.of(completed("d-new", at, 3_000))));
        metrics.publishDeferred();
        assertThat(registry.scrape()).as("600 rows registered just now: the new one waits").doesNotContain(row("d-new", "HOST_OFFHEAP"));
        long deadline = System.nanoTime() + 7_000_000_000L;
        while (!registry.scrape().contains(row("d-new", "HOST_OFFHEAP")) && System.nanoTime() < deadline) {
            metrics.publishDeferred();
            Thread.sleep(100);
        }
        assertThat(registry.scrape()).as("shown within 5 s, with no batch after it").contains(row("d-new", "HOST_OFFHEAP") + " 3000.0");
    }

    /**
     * Every phase of a batch is exported before the first batch commits (a dashboard's or a rule's query finds all
     * seven, at zero), and a committed batch adds its time to each of its phases alone.
     */
    @Test
    void everyPhaseIsExportedFromTheStartAndABatchAddsToItsOwn() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        StoreMetrics metrics = new StoreMetrics(registry, unreachable());
        String before = registry.scrape();

        metrics.committed(new BatchOutcome(0, 0, 0, 0, List.of(), List.of(), List.of(), List.of(), List.of(),
                Map.of(BatchPhase.ROWS, 2_000_000L, BatchPhase.COMMIT, 3_000_000L), List.of()));
        String after = registry.scrape();

        for (String phase : List.of("rows", "lock", "complete", "chain", "detect", "runtime", "commit")) {
            assertThat(before).as("phase %s before any batch", phase).contains("pa_store_batch_phase_seconds_count{phase=\"" + phase + "\"} 0");
        }
        assertThat(after).contains("pa_store_batch_phase_seconds_count{phase=\"rows\"} 1", "pa_store_batch_phase_seconds_sum{phase=\"rows\"} 0.002",
                "pa_store_batch_phase_seconds_sum{phase=\"commit\"} 0.003", "pa_store_batch_phase_seconds_count{phase=\"lock\"} 0");
    }

    private static String row(String deployment, String domain) {
        return "pa_store_load_bytes{deployment=\"" + deployment + "\",domain=\"" + domain + "\",model=\"m\",release=\"r1\"}";
    }

    private static BatchOutcome.CompletedLoad completed(String deployment, Instant at, long offHeap) {
        return new BatchOutcome.CompletedLoad(new LoadRef("l-" + deployment + at.getEpochSecond(), deployment, "m", "r1", at, "v", null, new LoadRef.Position(0, at.getEpochSecond())), 0,
                offHeap, 0);
    }

    private static BatchOutcome batch(List<BatchOutcome.CompletedLoad> completed) {
        return new BatchOutcome(0, completed.size(), 0, 0, completed, List.of(), List.of(), List.of(), List.of(), Map.of(), List.of());
    }

    /** A database that is not there: the gauges start empty. */
    private static DataSource unreachable() {
        return (DataSource) Proxy.newProxyInstance(StoreMetricsTest.class.getClassLoader(), new Class<?>[]{DataSource.class}, (proxy, method, args) -> {
            throw new SQLException("no database in this test");
        });
    }
}
