package dev.placementaudit.producer.load;

import dev.placementaudit.core.placement.MemoryDomain;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * What the loader holds for one tensor: where it actually went and how many bytes, and the memory itself, kept
 * reachable for as long as the loaded model is.
 *
 * @param note why it went elsewhere than planned (a refused mapping), else null
 */
record Held(MemoryDomain domain, long bytes, List<ByteBuffer> buffers, List<byte[]> arrays, String note) {
    static Held mapped(List<ByteBuffer> maps, long bytes) {
        return new Held(MemoryDomain.MMAP_FILE, bytes, maps, List.of(), null);
    }

    static Held offHeap(List<ByteBuffer> buffers, long bytes, String note) {
        return new Held(MemoryDomain.HOST_OFFHEAP, bytes, buffers, List.of(), note);
    }

    static Held heap(List<byte[]> arrays, long bytes) {
        return new Held(MemoryDomain.HOST_HEAP, bytes, List.of(), arrays, null);
    }
}
