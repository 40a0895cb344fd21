package dev.placementaudit.collector;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;

/**
 * What the collector counts: {@code pa_collector_requests_total{status}}, {@code pa_collector_items_total{fleet,kind,result}},
 * {@code pa_collector_batch_seconds} (a 202 or 422, from the request to the broker's acknowledgement),
 * {@code pa_collector_body_bytes}, {@code pa_collector_in_flight}, {@code pa_collector_broker_available}.
 */
final class CollectorMetrics {
    private final MeterRegistry registry;
    private final Timer batch;
    private final DistributionSummary body;

    CollectorMetrics(MeterRegistry registry, IntSupplier inFlight, BooleanSupplier brokerAvailable) {
        this.registry = registry;
        this.batch = Timer.builder("pa_collector_batch").description("a batch from its request to the broker's acknowledgement of every item")
                .publishPercentileHistogram().register(registry);
        this.body = DistributionSummary.builder("pa_collector_body_bytes").description("request bodies as sent").baseUnit("bytes").register(registry);
        Gauge.builder("pa_collector_in_flight", inFlight::getAsInt).description("batches being published now").register(registry);
        Gauge.builder("pa_collector_broker_available", () -> brokerAvailable.getAsBoolean() ? 1 : 0)
                .description("0 while the broker is taken as unavailable (503s) after a batch it did not acknowledge").register(registry);
    }

    void answered(int status, long nanos) {
        Counter.builder("pa_collector_requests").description("requests to /v1/loads by answer").tag("status", String.valueOf(status))
                .register(registry).increment();
        if (status == 202 || status == 422) {
            batch.record(nanos, TimeUnit.NANOSECONDS);
        }
    }

    void body(long bytes) {
        body.record(bytes);
    }

    void items(String fleet, List<Batch.Item> results) {
        for (Batch.Item item : results) {
            Counter.builder("pa_collector_items").description("loads and observations by what became of them").tag("fleet", fleet)
                    .tag("kind", item.kind()).tag("result", item.valid() ? "accepted" : "refused").register(registry).increment();
        }
    }
}
