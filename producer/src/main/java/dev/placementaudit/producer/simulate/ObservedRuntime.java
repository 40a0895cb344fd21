package dev.placementaudit.producer.simulate;

import dev.placementaudit.core.placement.AllocationDecision;
import dev.placementaudit.core.placement.MemoryDomain;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ObservationMethod;
import dev.placementaudit.events.RuntimeDecision;
import dev.placementaudit.events.RuntimeDomain;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.resolution.LoadValidator;

import java.util.ArrayList;
import java.util.List;

/**
 * A simulated runtime that reports what it did: it loads as the reference plan decides (the worker's resolver), unless a
 * {@link Drift.Diverge} makes it place some tensors otherwise, and measures what it holds, plus what a
 * {@link Drift.Leak} adds off-heap. Deterministic: the same load gives the same report. Its per-tensor placement is
 * reported in the load (each tensor's runtime decision), its observation carries the measured totals.
 */
public final class ObservedRuntime {
    private static final long HEAP_BEFORE = 256L << 20;
    private static final long DIRECT_BEFORE = 8L << 20;
    private final List<Drift> drift;
    private final List<String> releases;
    private final LoadValidator validator = new LoadValidator(Integer.MAX_VALUE);

    public ObservedRuntime(List<Drift> drift, List<String> releases) {
        this.drift = List.copyOf(drift);
        this.releases = List.copyOf(releases);
    }

    /** A load as its runtime reports it (with its own decisions), and what it then observed. */
    public record Report(ModelLoaded load, LoadObserved observation) {
    }

    public Report report(ModelLoaded load) {
        int release = releases.indexOf(load.getRelease());
        List<AllocationDecision> plan = LoadResolution.decide(validator.validate(load));
        long leak = 0;
        List<Drift.Diverge> diverge = new ArrayList<>();
        for (Drift d : drift) {
            if (d.fromRelease() <= release) {
                if (d instanceof Drift.Leak l) {
                    leak += l.bytes();
                } else if (d instanceof Drift.Diverge v) {
                    diverge.add(v);
                }
            }
        }
        List<TensorInfo> tensors = new ArrayList<>(plan.size());
        long heap = 0;
        long offHeap = 0;
        long mapped = 0;
        for (int i = 0; i < plan.size(); i++) {
            AllocationDecision decided = plan.get(i);
            MemoryDomain domain = decided.domain();
            String name = decided.tensorName();
            if (diverge.stream().anyMatch(v -> v.matches(name))) {
                domain = domain == MemoryDomain.HOST_OFFHEAP ? MemoryDomain.HOST_HEAP : MemoryDomain.HOST_OFFHEAP;
            }
            long bytes = decided.residentBytes();
            switch (domain) {
                case MMAP_FILE -> mapped += bytes;
                case HOST_OFFHEAP -> offHeap += bytes;
                default -> heap += bytes;
            }
            tensors.add(TensorInfo.newBuilder(load.getTensors().get(i)).setRuntime(RuntimeDecision.newBuilder()
                    .setDomain(RuntimeDomain.valueOf(domain.name())).setResidentBytes(bytes).build()).build());
        }
        LoadObserved observation = LoadObserved.newBuilder()
                .setLoadId(load.getLoadId())
                .setDeploymentId(load.getDeployment().getId())
                .setObservedAt(load.getOccurredAt().plusSeconds(2))
                .setMethod(ObservationMethod.newBuilder().setName("simulated").setRuntime("placement-audit fleet simulator")
                        .setLimits(List.of("simulated: what a runtime holding its plan (and any drift) would measure")).build())
                .setHeapUsedBeforeBytes(HEAP_BEFORE).setHeapUsedAfterBytes(HEAP_BEFORE + heap)
                .setDirectBeforeBytes(DIRECT_BEFORE).setDirectAfterBytes(DIRECT_BEFORE + offHeap + leak)
                .setMappedBeforeBytes(0L).setMappedAfterBytes(mapped)
                .setAnonRssDeltaBytes(heap + offHeap + leak)
                // No per-tensor list: where each tensor went travels once, in the load (its runtime decisions); the observation
                // carries what was measured. A fleet of devices sends a few hundred bytes per load, not kilobytes.
                .setTensors(List.of())
                .setProducer("placement-audit-producer simulate")
                .build();
        return new Report(ModelLoaded.newBuilder(load).setTensors(tensors).build(), observation);
    }
}
