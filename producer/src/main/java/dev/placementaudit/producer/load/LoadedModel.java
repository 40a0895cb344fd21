package dev.placementaudit.producer.load;

import dev.placementaudit.core.placement.AllocationDecision;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ObservationMethod;
import dev.placementaudit.events.ObservedDomain;
import dev.placementaudit.events.ObservedTensor;
import dev.placementaudit.events.RuntimeDecision;
import dev.placementaudit.events.RuntimeDomain;
import dev.placementaudit.events.TensorInfo;

import java.lang.ref.Reference;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * A model held as its plan decided, with what was measured before and after. Holding it keeps every buffer and array
 * reachable; {@link #close} lets them go (the JVM frees direct and mapped memory when they are collected).
 */
public final class LoadedModel implements AutoCloseable {
    private final ModelLoaded load;
    private final List<AllocationDecision> plan;
    /** Where each tensor went (no memory attached), kept after close. */
    private final List<Held> held;
    /** The memory itself, until close. */
    private List<Held> memory;
    private final DomainBytes planned;
    private final MemoryProbe.Snapshot before;
    private final MemoryProbe.Snapshot after;
    private final long loadNanos;
    private final boolean proc;

    LoadedModel(ModelLoaded load, List<AllocationDecision> plan, List<Held> held, DomainBytes planned, MemoryProbe.Snapshot before,
                MemoryProbe.Snapshot after, long loadNanos, boolean proc) {
        this.load = load;
        this.plan = List.copyOf(plan);
        this.memory = List.copyOf(held);
        this.held = held.stream().map(h -> new Held(h.domain(), h.bytes(), List.of(), List.of(), h.note())).toList();
        this.planned = planned;
        this.before = before;
        this.after = after;
        this.loadNanos = loadNanos;
        this.proc = proc;
    }

    /** The reference plan's bytes per domain. */
    public DomainBytes planned() {
        return planned;
    }

    /** Where the loader actually put the bytes, per domain, as it decided (a refused mapping moves bytes off-heap). */
    public DomainBytes runtime() {
        return DomainBytes.held(held);
    }

    public boolean measured() {
        return before != null;
    }

    /** Measured, after minus before: heap in use, the direct pool, the mapped pool. */
    public DomainBytes observed() {
        requireMeasured();
        return new DomainBytes(after.heapUsed() - before.heapUsed(), after.direct() - before.direct(), after.mapped() - before.mapped());
    }

    /** The model file's mappings this load added (size, resident pages), where the platform says; else null. */
    public MemoryProbe.FileMappings fileMappings() {
        requireMeasured();
        if (after.file() == null || before.file() == null) {
            return null;
        }
        return new MemoryProbe.FileMappings(after.file().mappings() - before.file().mappings(),
                after.file().sizeBytes() - before.file().sizeBytes(), after.file().residentBytes() - before.file().residentBytes());
    }

    /** Anonymous resident memory the load added, where the platform says; else null. */
    public Long anonRssDelta() {
        requireMeasured();
        if (after.rssAnon().isEmpty() || before.rssAnon().isEmpty()) {
            return null;
        }
        return after.rssAnonBytes().getAsLong() - before.rssAnonBytes().getAsLong();
    }

    public long loadNanos() {
        return loadNanos;
    }

    /** Tensors the loader put elsewhere than planned, with why (a refused mapping). */
    public List<String> departures() {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < plan.size(); i++) {
            Held h = held.get(i);
            if (h.domain() != plan.get(i).domain() || h.bytes() != plan.get(i).residentBytes()) {
                out.add(String.format(Locale.ROOT, "%s: planned %s, held %s%s", plan.get(i).tensorName(), plan.get(i).domain(), h.domain(),
                        h.note() == null ? "" : " (" + h.note() + ")"));
            }
        }
        return out;
    }

    /** The load as this runtime reports it: every tensor with the decision it actually carried out. */
    public ModelLoaded reported() {
        List<TensorInfo> tensors = new ArrayList<>(plan.size());
        for (int i = 0; i < plan.size(); i++) {
            Held h = held.get(i);
            tensors.add(TensorInfo.newBuilder(load.getTensors().get(i)).setRuntime(RuntimeDecision.newBuilder()
                    .setDomain(RuntimeDomain.valueOf(h.domain().name())).setResidentBytes(h.bytes()).build()).build());
        }
        return ModelLoaded.newBuilder(load).setTensors(tensors).build();
    }

    /** What was measured, as the event a runtime publishes after its load. */
    public LoadObserved observation(Instant observedAt, String producer) {
        requireMeasured();
        List<ObservedTensor> tensors = new ArrayList<>(plan.size());
        for (int i = 0; i < plan.size(); i++) {
            tensors.add(ObservedTensor.newBuilder().setName(plan.get(i).tensorName())
                    .setDomain(ObservedDomain.valueOf(held.get(i).domain().name())).setResidentBytes(held.get(i).bytes()).build());
        }
        MemoryProbe.FileMappings file = fileMappings();
        List<String> limits = new ArrayList<>(List.of(
                "heap in use is read before the load after a collection is requested (the JVM may ignore it: -XX:+DisableExplicitGC), "
                        + "and after the load without one: it includes what the load allocated and let go, and what other threads allocate",
                "the buffer pools count every direct and mapped buffer of the process, not only this model's: the load's share is after minus before"));
        if (!proc) {
            limits.add("no /proc on this platform: the file's resident pages and the anonymous RSS are not measured");
        } else {
            limits.add("the file's resident pages are the pages touched so far: a mapping is paged in as it is read");
        }
        return LoadObserved.newBuilder()
                .setLoadId(load.getLoadId())
                .setDeploymentId(load.getDeployment().getId())
                .setObservedAt(observedAt)
                .setMethod(ObservationMethod.newBuilder().setName(ReferenceLoader.METHOD)
                        .setRuntime(System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version") + " on "
                                + System.getProperty("os.name") + " " + System.getProperty("os.arch"))
                        .setLimits(limits).build())
                .setHeapUsedBeforeBytes(before.heapUsed())
                .setHeapUsedAfterBytes(after.heapUsed())
                .setDirectBeforeBytes(before.direct())
                .setDirectAfterBytes(after.direct())
                .setMappedBeforeBytes(before.mapped())
                .setMappedAfterBytes(after.mapped())
                .setFileMappedBytes(file == null ? null : file.sizeBytes())
                .setFileResidentBytes(file == null ? null : file.residentBytes())
                .setAnonRssDeltaBytes(anonRssDelta())
                .setTensors(tensors)
                .setProducer(producer)
                .build();
    }

    private void requireMeasured() {
        if (before == null) {
            throw new IllegalStateException("this load was not measured: load it with measure=true");
        }
    }

    /** Lets the memory go: the buffers and arrays become unreachable. */
    @Override
    public void close() {
        Reference.reachabilityFence(memory);
        memory = List.of();
    }

    @Override
    public String toString() {
        return "LoadedModel[" + load.getModel().getName() + ", " + Objects.requireNonNullElse(planned, "") + "]";
    }
}
