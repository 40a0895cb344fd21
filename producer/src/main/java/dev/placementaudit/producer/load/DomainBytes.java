package dev.placementaudit.producer.load;

import dev.placementaudit.core.placement.AllocationDecision;
import dev.placementaudit.core.placement.MemoryDomain;

import java.util.List;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/** Bytes per memory domain the resolver chooses from: heap, off-heap, mapped. */
public record DomainBytes(long heap, long offHeap, long mapped) {
    static DomainBytes of(List<AllocationDecision> plan) {
        return sum(plan, AllocationDecision::domain, AllocationDecision::residentBytes);
    }

    static DomainBytes held(List<Held> held) {
        return sum(held, Held::domain, Held::bytes);
    }

    /** The bytes of these items per domain: mapped, off-heap, and the rest on the heap. */
    private static <T> DomainBytes sum(List<T> items, Function<T, MemoryDomain> domain, ToLongFunction<T> bytes) {
        long heap = 0;
        long offHeap = 0;
        long mapped = 0;
        for (T item : items) {
            switch (domain.apply(item)) {
                case MMAP_FILE -> mapped += bytes.applyAsLong(item);
                case HOST_OFFHEAP -> offHeap += bytes.applyAsLong(item);
                default -> heap += bytes.applyAsLong(item);
            }
        }
        return new DomainBytes(heap, offHeap, mapped);
    }
}
