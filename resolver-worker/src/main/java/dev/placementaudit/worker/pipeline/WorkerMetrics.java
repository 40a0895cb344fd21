package dev.placementaudit.worker.pipeline;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.MemoryDomain;
import dev.placementaudit.service.PhaseTimers;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The worker's meters, counted only after a transaction commits so that a metric never claims work a crash
 * undid. Prometheus names: {@code pa_worker_decisions_total{domain}}, {@code pa_worker_resident_bytes_total{domain}},
 * {@code pa_worker_loads_total{outcome}}, {@code pa_worker_dlq_total{reason}}, {@code pa_worker_transactions_total{outcome}},
 * {@code pa_worker_batch_seconds}, {@code pa_worker_batch_phase_seconds{phase}} (where a batch's time goes on the loop
 * thread, see {@link Phase}), {@code pa_worker_consumer_lag}, {@code pa_worker_producer_recreated_total} (the
 * transactional producer made anew after an outage left it unusable), {@code pa_worker_runtime_reported_tensors_total},
 * {@code pa_worker_diverged_tensors_total} and {@code pa_worker_diverged_loads_total} (DIVERGED findings: the runtime placed a
 * tensor otherwise than the reference resolver; such a load is resolved and recorded like any other, never dead-lettered).
 */
public final class WorkerMetrics {
    /**
     * Where a batch's time goes on the loop thread, which sends and commits one batch at a time: what an operator reads to
     * tell a worker short of cores from a slow broker.
     */
    public enum Phase {
        /** Waiting for the preparing threads to finish a record (decode, validate, resolve, encode): they are behind. */
        RESOLVING,
        /** Handing the outputs to the Kafka producer, which batches and compresses them on this thread. */
        SENDING,
        /** Polling the next batches while this one's are in flight, and starting their preparation. */
        POLLING,
        /**
         * Committing: the producer's last batches acknowledged, the offsets and the transaction's end through the
         * coordinator. With commits overlapping (the default), the loop's part of it: the previous batch's commit waited
         * for, and this batch's records acknowledged (the flush that keeps input order) before its commit is handed over.
         * Long with a slow or distant broker, or when the preparing threads take the cores the producer's sender and a
         * broker on the same machine need.
         */
        COMMITTING
    }

    private final MeterRegistry registry;
    private final Map<MemoryDomain, Counter> decisions = new EnumMap<>(MemoryDomain.class);
    private final Map<MemoryDomain, Counter> residentBytes = new EnumMap<>(MemoryDomain.class);
    private final Map<String, Counter> deadLetters = new ConcurrentHashMap<>();
    private final Counter loadsResolved;
    private final Counter loadsDeadLettered;
    private final Counter committed;
    private final Counter aborted;
    private final Counter producerRecreated;
    private final Counter runtimeReported;
    private final Counter diverged;
    private final Counter divergedLoads;
    private final Timer batch;
    private final PhaseTimers<Phase> phases;
    private final AtomicLong lag = new AtomicLong();

    public WorkerMetrics(MeterRegistry registry) {
        this.registry = registry;
        for (MemoryDomain domain : MemoryDomain.values()) {
            decisions.put(domain, Counter.builder("pa.worker.decisions").description("AllocationDecided events committed")
                    .tag("domain", domain.name()).register(registry));
            residentBytes.put(domain, Counter.builder("pa.worker.resident.bytes").description("resident bytes decided")
                    .baseUnit("bytes").tag("domain", domain.name()).register(registry));
        }
        loadsResolved = Counter.builder("pa.worker.loads").tag("outcome", "resolved").register(registry);
        loadsDeadLettered = Counter.builder("pa.worker.loads").tag("outcome", "dead_lettered").register(registry);
        committed = Counter.builder("pa.worker.transactions").tag("outcome", "committed").register(registry);
        aborted = Counter.builder("pa.worker.transactions").tag("outcome", "aborted").register(registry);
        producerRecreated = Counter.builder("pa.worker.producer.recreated")
                .description("transactional producers made anew after a broker outage or an aborted epoch left the last one unusable")
                .register(registry);
        runtimeReported = Counter.builder("pa.worker.runtime.reported.tensors")
                .description("tensors whose load carried the runtime's own decision").register(registry);
        diverged = Counter.builder("pa.worker.diverged.tensors")
                .description("DIVERGED findings: tensors the runtime placed otherwise than the reference resolver").register(registry);
        divergedLoads = Counter.builder("pa.worker.diverged.loads").description("loads with at least one DIVERGED tensor").register(registry);
        batch = Timer.builder("pa.worker.batch").description("one poll's records, resolved and committed").register(registry);
        this.phases = new PhaseTimers<>(registry, "pa.worker.batch.phase", "a batch's time on the loop thread, by phase", Phase.class);
        Gauge.builder("pa.worker.consumer.lag", lag, AtomicLong::get).description("records behind the input's end, summed over assigned partitions")
                .register(registry);
    }

    /**
     * What one committed transaction did, counted from each load's summary, which totals its decisions per domain:
     * this runs on the loop thread, or the committing thread, which should not walk every decision again.
     */
    public void committed(List<LoadResolved> loads, Map<String, Integer> deadLettersByReason) {
        committed.increment();
        for (LoadResolved load : loads) {
            count(MemoryDomain.HOST_HEAP, load.getHeapTensors(), load.getHeapBytes());
            count(MemoryDomain.HOST_OFFHEAP, load.getOffHeapTensors(), load.getOffHeapBytes());
            count(MemoryDomain.MMAP_FILE, load.getMappedTensors(), load.getMappedBytes());
            if (load.getRuntimeReportedTensors() > 0) {
                runtimeReported.increment(load.getRuntimeReportedTensors());
                if (load.getDivergedTensors() > 0) {
                    diverged.increment(load.getDivergedTensors());
                    divergedLoads.increment();
                }
            }
        }
        loadsResolved.increment(loads.size());
        deadLettersByReason.forEach((reason, count) -> {
            loadsDeadLettered.increment(count);
            deadLetters.computeIfAbsent(reason, r -> Counter.builder("pa.worker.dlq").tag("reason", r).register(registry)).increment(count);
        });
    }

    private void count(MemoryDomain domain, int tensors, long bytes) {
        decisions.get(domain).increment(tensors);
        residentBytes.get(domain).increment(bytes);
    }

    public void aborted() {
        aborted.increment();
    }

    public void producerRecreated() {
        producerRecreated.increment();
    }

    public double producersRecreated() {
        return producerRecreated.count();
    }

    public Timer batchTimer() {
        return batch;
    }

    /** Adds one batch's time in this phase. */
    public void phase(Phase phase, long nanos) {
        phases.record(phase, nanos);
    }

    public void lag(long records) {
        lag.set(records);
    }

    public double decisionsTotal() {
        return decisions.values().stream().mapToDouble(Counter::count).sum();
    }

    public double committedTransactions() {
        return committed.count();
    }
}
