package dev.placementaudit.producer.load;

import dev.placementaudit.core.placement.AllocationDecision;
import dev.placementaudit.core.placement.MemoryDomain;

import java.util.List;

/** Bytes per memory domain the resolver chooses from: heap, off-heap, mapped. */
public record DomainBytes(long heap, long offHeap, long mapped) {
    static DomainBytes of(List<AllocationDecision> plan) {
        long heap = 0;
        long offHeap = 0;
        long mapped = 0;
        for (AllocationDecision decision : plan) {
            switch (decision.domain()) {
                case MMAP_FILE -> mapped += decision.residentBytes();
                case HOST_OFFHEAP -> offHeap += decision.residentBytes();
                default -> heap += decision.residentBytes();
            }
        }
        return new DomainBytes(heap, offHeap, mapped);
    }

    static DomainBytes held(List<Held> held) {
        long heap = 0;
        long offHeap = 0;
        long mapped = 0;
        for (Held h : held) {
            if (h.domain() == MemoryDomain.MMAP_FILE) {
                mapped += h.bytes();
            } else if (h.domain() == MemoryDomain.HOST_OFFHEAP) {
                offHeap += h.bytes();
            } else {
                heap += h.bytes();
            }
        }
        return new DomainBytes(heap, offHeap, mapped);
    }

    public long total() {
        return heap + offHeap + mapped;
    }
}
