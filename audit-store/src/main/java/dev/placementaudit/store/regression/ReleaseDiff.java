package dev.placementaudit.store.regression;

import dev.placementaudit.store.plans.TensorPlacement;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Compares two loads of one model on one deployment, tensor by tensor. Pure: the live detector, the API's
 * on-demand diff and what-if replay all call this.
 */
public final class ReleaseDiff {
    public static final String MMAP = "MMAP_FILE";
    public static final String OFFHEAP = "HOST_OFFHEAP";
    public static final String HEAP = "HOST_HEAP";

    private ReleaseDiff() {
    }

    public static List<Finding> compare(List<TensorPlacement> before, List<TensorPlacement> after, GrowthRule offHeap, GrowthRule heap) {
        Map<String, TensorPlacement> old = index(before);
        Map<String, TensorPlacement> now = index(after);
        List<Finding> findings = new ArrayList<>();
        for (TensorPlacement n : after) {
            TensorPlacement o = old.get(n.name());
            if (o == null) {
                findings.add(tensor(FindingKind.TENSOR_ADDED, null, n));
                continue;
            }
            if (MMAP.equals(o.domain()) && !MMAP.equals(n.domain())) {
                findings.add(tensor(FindingKind.LOST_MAPPING, o, n));
            } else if (!MMAP.equals(o.domain()) && MMAP.equals(n.domain())) {
                findings.add(tensor(FindingKind.GAINED_MAPPING, o, n));
            } else if (!o.domain().equals(n.domain())) {
                findings.add(tensor(FindingKind.DOMAIN_CHANGED, o, n));
            }
            if (!o.residentFormat().equals(n.residentFormat())) {
                findings.add(tensor(FindingKind.FORMAT_CHANGED, o, n));
            }
        }
        for (TensorPlacement o : before) {
            if (!now.containsKey(o.name())) {
                findings.add(tensor(FindingKind.TENSOR_REMOVED, o, null));
            }
        }
        long offHeapBefore = total(before, OFFHEAP);
        long offHeapAfter = total(after, OFFHEAP);
        if (offHeap.fires(offHeapBefore, offHeapAfter)) {
            findings.add(Finding.total(FindingKind.OFFHEAP_GROWTH, offHeapBefore, offHeapAfter, offHeap.describe()));
        }
        long heapBefore = total(before, HEAP);
        long heapAfter = total(after, HEAP);
        if (heap.fires(heapBefore, heapAfter)) {
            findings.add(Finding.total(FindingKind.HEAP_GROWTH, heapBefore, heapAfter, heap.describe()));
        }
        return findings;
    }

    public static long total(List<TensorPlacement> tensors, String domain) {
        return tensors.stream().filter(t -> t.domain().equals(domain)).mapToLong(TensorPlacement::residentBytes).sum();
    }

    private static Finding tensor(FindingKind kind, TensorPlacement o, TensorPlacement n) {
        return new Finding(kind, (n != null ? n : o).name(), o == null ? null : o.domain(), n == null ? null : n.domain(),
                o == null ? 0 : o.residentBytes(), n == null ? 0 : n.residentBytes(), o == null ? null : o.residentFormat(),
                n == null ? null : n.residentFormat(), o == null ? null : o.reason(), n == null ? null : n.reason());
    }

    private static Map<String, TensorPlacement> index(List<TensorPlacement> tensors) {
        Map<String, TensorPlacement> byName = new LinkedHashMap<>();
        tensors.forEach(t -> byName.put(t.name(), t));
        return byName;
    }
}
