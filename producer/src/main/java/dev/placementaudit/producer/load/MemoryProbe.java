package dev.placementaudit.producer.load;

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;

/**
 * What this JVM holds, per memory domain, at one instant: the managed heap in use, the direct and mapped buffer
 * pools ({@link BufferPoolMXBean}), and where the platform has them, the anonymous resident memory
 * ({@code /proc/self/status} RssAnon) and the size and resident pages of one file's mappings ({@code /proc/self/smaps}).
 */
public final class MemoryProbe {
    /** Where Linux says what a process holds; absent elsewhere, and then those measures are left out. */
    private final Path procSelf;

    public MemoryProbe() {
        this(Path.of("/proc/self"));
    }

    MemoryProbe(Path procSelf) {
        this.procSelf = procSelf;
    }

    /**
     * One reading. {@code settleHeap} asks for a collection first, so that heap in use is what is held rather than
     * garbage not yet collected; it is a request the JVM may ignore ({@code -XX:+DisableExplicitGC}).
     */
    public Snapshot snapshot(Path mappedFile, boolean settleHeap) {
        if (settleHeap) {
            settle();
        }
        Snapshot pools = snapshot((FileMappings) null, false);
        return new Snapshot(pools.heapUsed(), pools.direct(), pools.mapped(), pools.rssAnon(), mappedFile == null ? null : fileMappings(mappedFile));
    }

    /** A reading with the file's mappings already read ({@code file}: null where they could not be). */
    public Snapshot snapshot(FileMappings file, boolean settleHeap) {
        if (settleHeap) {
            settle();
        }
        long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        return new Snapshot(heap, pool("direct"), pool("mapped"), statusKb("RssAnon:"), file);
    }

    /**
     * Asks for a collection, waits until the JVM has processed the references that collection found (a phantom
     * reference to an object made unreachable just before is seen enqueued), then waits (at most about 200 ms) until
     * the buffer pools stop shrinking: the JVM frees a collected direct or mapped buffer only when its cleaner runs,
     * after the collection, so reading at once would count buffers already garbage (a model loaded before and let go,
     * say). Without the first wait, a pool steady for a few ms while reference processing had not yet begun was taken
     * as settled, and a buffer freed during the load then showed as negative off-heap. Where the JVM ignores the
     * request ({@code -XX:+DisableExplicitGC}: no collection is counted), nothing will process the sentinel soon, and
     * that wait is skipped rather than paid in full on every measured load.
     */
    private static void settle() {
        ReferenceQueue<Object> processed = new ReferenceQueue<>();
        PhantomReference<Object> sentinel = new PhantomReference<>(new Object(), processed);
        long collections = collections();
        System.gc();
        if (collections() != collections) {
            try {
                processed.remove(500);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        Reference.reachabilityFence(sentinel);
        long last = pool("direct") + pool("mapped");
        int steady = 0;
        for (int i = 0; i < 200 && steady < 5; i++) {
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            long now = pool("direct") + pool("mapped");
            steady = now == last ? steady + 1 : 0;
            last = now;
        }
    }

    /** Collections the JVM has run so far, all collectors together. */
    private static long collections() {
        long count = 0;
        for (GarbageCollectorMXBean collector : ManagementFactory.getGarbageCollectorMXBeans()) {
            count += Math.max(0, collector.getCollectionCount());
        }
        return count;
    }

    /** Whether this platform gives the {@code /proc} measures (Linux). */
    public boolean hasProc() {
        return Files.isReadable(procSelf.resolve("smaps")) && Files.isReadable(procSelf.resolve("maps"))
                && Files.isReadable(procSelf.resolve("status"));
    }

    private static long pool(String name) {
        for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (pool.getName().equals(name)) {
                return pool.getMemoryUsed();
            }
        }
        return 0;
    }

    private OptionalLong statusKb(String field) {
        try {
            for (String line : lines(procSelf.resolve("status"))) {
                if (line.startsWith(field)) {
                    return OptionalLong.of(kb(line));
                }
            }
        } catch (IOException | RuntimeException e) {
            // Not Linux, or /proc not mounted: the measure is left out, and the observation says so.
        }
        return OptionalLong.empty();
    }

    /**
     * The mappings of {@code file}: first looked for in {@code /proc/self/maps} (a line per mapping, cheap); only when
     * there are some is {@code /proc/self/smaps} read (the kernel walks every mapping's pages to write it, some ms), where
     * each mapping starts with a header line ending in the mapped path, followed by {@code Size:} and {@code Rss:} lines in kB.
     */
    public FileMappings fileMappings(Path file) {
        List<String> lines;
        String path;
        try {
            path = file.toRealPath().toString();
            if (lines(procSelf.resolve("maps")).stream().noneMatch(line -> isHeader(line) && line.endsWith(" " + path))) {
                return new FileMappings(0, 0, 0);
            }
            lines = lines(procSelf.resolve("smaps"));
        } catch (IOException | RuntimeException e) {
            return null;
        }
        long size = 0;
        long rss = 0;
        int mappings = 0;
        boolean ours = false;
        for (String line : lines) {
            if (isHeader(line)) {
                ours = line.endsWith(" " + path);
                if (ours) {
                    mappings++;
                }
            } else if (ours && line.startsWith("Size:")) {
                size += kb(line) * 1024;
            } else if (ours && line.startsWith("Rss:")) {
                rss += kb(line) * 1024;
            }
        }
        return new FileMappings(mappings, size, rss);
    }

    /**
     * A file's lines, read through {@link java.io.FileInputStream}: NIO's channels read into a heap array through a
     * temporary direct buffer cached per thread, which would show in the direct pool this probe measures.
     */
    private static List<String> lines(Path file) throws IOException {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(new FileInputStream(file.toFile()), StandardCharsets.UTF_8), 1 << 16)) {
            return in.lines().toList();
        }
    }

    /** A mapping's header: {@code start-end perms offset dev inode [path]}, the address range in hexadecimal. */
    static boolean isHeader(String line) {
        int space = line.indexOf(' ');
        int dash = line.indexOf('-');
        if (space < 0 || dash <= 0 || dash > space) {
            return false;
        }
        for (int i = 0; i < space; i++) {
            if (i != dash && Character.digit(line.charAt(i), 16) < 0) {
                return false;
            }
        }
        return true;
    }

    /** The number of a {@code Name:   1234 kB} line. */
    private static long kb(String line) {
        return Long.parseLong(line.trim().split("\\s+")[1]);
    }

    /** One file's mappings in the process: how many, their size and their resident pages, in bytes. */
    public record FileMappings(int mappings, long sizeBytes, long residentBytes) {
    }

    /**
     * @param rssAnon in kB as {@code /proc} gives it; empty where the platform has no {@code /proc}
     * @param file    the model file's mappings; null where the platform cannot say
     */
    public record Snapshot(long heapUsed, long direct, long mapped, OptionalLong rssAnon, FileMappings file) {
        public OptionalLong rssAnonBytes() {
            return rssAnon.isPresent() ? OptionalLong.of(rssAnon.getAsLong() * 1024) : OptionalLong.empty();
        }
    }
}
