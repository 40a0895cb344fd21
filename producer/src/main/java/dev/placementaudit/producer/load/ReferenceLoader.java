package dev.placementaudit.producer.load;

import dev.placementaudit.service.DaemonThreads;
import com.sun.management.HotSpotDiagnosticMXBean;
import dev.placementaudit.core.placement.AllocationDecision;
import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.core.placement.MemoryDomain;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.resolution.InvalidLoadException;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.resolution.ValidLoad;

import java.io.EOFException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.List;

/**
 * A reference JVM runtime's loader: it loads a model file the way the reference plan decides (the resolver the worker
 * runs, asked through {@link LoadResolution#decide}), holds every tensor, and measures what the process then holds.
 * <ul>
 *   <li>{@code MMAP_FILE}: mapped read-only with {@link FileChannel#map}; a mapping the platform refuses falls back to
 *       an off-heap copy, as a runtime would, and is reported as such (a DIVERGED tensor, and mapped bytes not seen);</li>
 *   <li>{@code HOST_OFFHEAP}: copied into direct buffers of the resident size (a re-encoded weight only changes the size:
 *       its bytes stay zeros, which is enough to hold the memory);</li>
 *   <li>{@code HOST_HEAP}: read into heap arrays of the resident size.</li>
 * </ul>
 * Arrays and buffers are at most 1 GiB each, so a tensor past Java's 2 GiB array limit is held in several.
 */
public final class ReferenceLoader {
    /** How a {@link LoadedModel} measures: named on every observation. */
    public static final String METHOD = "jvm-buffer-pools+proc-smaps";
    private static final int CHUNK = 1 << 30;
    private final MemoryProbe probe;

    public ReferenceLoader() {
        this(new MemoryProbe());
    }

    ReferenceLoader(MemoryProbe probe) {
        this.probe = probe;
    }

    /**
     * Loads {@code file} as the plan of {@code load} (a ModelLoaded built from that file's header) decides.
     *
     * @param measure take the before and after readings ({@link LoadedModel#observation}); without, the load is the same
     *                and nothing is measured
     * @throws LoadException when the plan cannot be held here (direct memory capped below it, a heap too small, a file
     *                       that is not the one the load describes), saying which limit to raise
     */
    public LoadedModel load(Path file, ModelLoaded load, boolean measure) {
        ValidLoad valid;
        try {
            valid = new LoadValidator(Integer.MAX_VALUE).validate(load);
        } catch (InvalidLoadException e) {
            throw new LoadException("the load of " + file + " is not one the worker would accept: " + e.getMessage(), e);
        }
        List<AllocationDecision> plan = LoadResolution.decide(valid);
        DomainBytes planned = DomainBytes.of(plan);
        requireDirectRoom(planned.offHeap());
        MemoryProbe.Snapshot before = measure ? probe.snapshot(file, true) : null;
        Held[] held = new Held[plan.size()];
        CompletableFuture<MemoryProbe.FileMappings> mappings = null;
        long started = System.nanoTime();
        // One descriptor: heap arrays are read through it with RandomAccessFile (NIO would stage a heap read in a temporary
        // direct buffer it keeps per thread, which the direct pool, measured here, would count), the rest through its channel.
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "r"); FileChannel channel = raf.getChannel()) {
            // The mappings first. Nothing after them touches their pages (copies read the file, they do not fault the
            // mappings in), so the file's mappings can be read now, off the load's path, while the copies proceed: that
            // reading (/proc/self/smaps) costs the kernel a walk of every page the process holds, more as the copies fill.
            for (int i = 0; i < plan.size(); i++) {
                if (plan.get(i).domain() == MemoryDomain.MMAP_FILE) {
                    held[i] = hold(raf, channel, load.getTensors().get(i), plan.get(i));
                }
            }
            if (measure) {
                mappings = readMappingsAside(file);
            }
            for (int i = 0; i < plan.size(); i++) {
                if (held[i] == null) {
                    held[i] = hold(raf, channel, load.getTensors().get(i), plan.get(i));
                }
            }
        } catch (IOException e) {
            throw new LoadException("cannot read " + file + ": " + e.getMessage(), e);
        } catch (OutOfMemoryError e) {
            Arrays.fill(held, null);
            throw outOfMemory(e, planned);
        }
        long loadNanos = System.nanoTime() - started;
        // After: no collection. The load's buffers are all live, so the pools need none, and a collection would cost the
        // load more than anything it left behind (a few objects: the readings' limits say so) would skew heap in use.
        MemoryProbe.Snapshot after = measure ? probe.snapshot(mappings.join(), false) : null;
        return new LoadedModel(load, plan, Arrays.asList(held), planned, before, after, loadNanos, probe.hasProc());
    }

    /** The file's mappings as the process has them, read on a thread of its own. */
    private CompletableFuture<MemoryProbe.FileMappings> readMappingsAside(Path file) {
        CompletableFuture<MemoryProbe.FileMappings> result = new CompletableFuture<>();
        DaemonThreads.start("placement-audit-mappings", () -> {
            try {
                result.complete(probe.fileMappings(file));
            } catch (RuntimeException e) {
                result.complete(null);
            }
        });
        return result;
    }

    private Held hold(RandomAccessFile raf, FileChannel channel, TensorInfo tensor, AllocationDecision decision) throws IOException {
        long stored = tensor.getStoredBytes();
        long resident = decision.residentBytes();
        Long offset = tensor.getFileOffset();
        // The bytes are the file's only when the loader keeps them as stored; a re-encoded weight is held at its size.
        boolean asStored = resident == stored && decision.residentFormat().equals(decision.storedFormat());
        if (decision.domain() == MemoryDomain.MMAP_FILE) {
            if (offset != null && offset + stored <= channel.size()) {
                try {
                    return Held.mapped(map(channel, offset, stored), stored);
                } catch (IOException | UnsupportedOperationException e) {
                    // The platform refused the mapping: the bytes become anonymous memory, as in a runtime that falls back.
                    return Held.offHeap(direct(channel, offset, stored, true), stored, "mapping refused: " + e.getMessage());
                }
            }
            return Held.offHeap(direct(channel, offset, stored, false), stored,
                    "no mappable range in the file (offset " + offset + ", " + stored + " bytes)");
        }
        if (decision.domain() == MemoryDomain.HOST_OFFHEAP) {
            return Held.offHeap(direct(channel, offset, resident, asStored && offset != null), resident, null);
        }
        return Held.heap(heap(raf, offset, resident, asStored && offset != null), resident);
    }

    private static List<ByteBuffer> map(FileChannel channel, long offset, long bytes) throws IOException {
        List<ByteBuffer> maps = new ArrayList<>(1);
        for (long done = 0; done < bytes; done += CHUNK) {
            maps.add(channel.map(FileChannel.MapMode.READ_ONLY, offset + done, Math.min(CHUNK, bytes - done)));
        }
        return maps;
    }

    private static List<ByteBuffer> direct(FileChannel channel, Long offset, long bytes, boolean copy) throws IOException {
        List<ByteBuffer> buffers = new ArrayList<>(1);
        for (long done = 0; done < bytes; done += CHUNK) {
            ByteBuffer buffer = ByteBuffer.allocateDirect((int) Math.min(CHUNK, bytes - done));
            if (copy) {
                read(channel, buffer, offset + done);
            }
            buffers.add(buffer);
        }
        return buffers;
    }

    private static List<byte[]> heap(RandomAccessFile raf, Long offset, long bytes, boolean copy) throws IOException {
        List<byte[]> arrays = new ArrayList<>(1);
        for (long done = 0; done < bytes; done += CHUNK) {
            byte[] array = new byte[(int) Math.min(CHUNK, bytes - done)];
            if (copy) {
                raf.seek(offset + done);
                try {
                    raf.readFully(array);
                } catch (EOFException e) {
                    throw new IOException("the file ends before " + (offset + done + array.length) + ", inside a tensor the header places there", e);
                }
            }
            arrays.add(array);
        }
        return arrays;
    }

    private static void read(FileChannel channel, ByteBuffer into, long position) throws IOException {
        long at = position;
        while (into.hasRemaining()) {
            int n = channel.read(into, at);
            if (n < 0) {
                throw new IOException("the file ends at " + at + ", inside a tensor the header places up to " + (position + into.limit()));
            }
            at += n;
        }
    }

    /** The most direct memory this JVM lets buffers hold: -XX:MaxDirectMemorySize, else (JDK 17) the heap's maximum. */
    public static long directMemoryCap() {
        try {
            HotSpotDiagnosticMXBean hotspot = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
            long set = Long.parseLong(hotspot.getVMOption("MaxDirectMemorySize").getValue());
            if (set > 0) {
                return set;
            }
        } catch (RuntimeException e) {
            // Not HotSpot: the default below is what the JDK's own check uses.
        }
        return Runtime.getRuntime().maxMemory();
    }

    private static void requireDirectRoom(long offHeap) {
        long cap = directMemoryCap();
        long inUse = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                .filter(pool -> pool.getName().equals("direct")).mapToLong(BufferPoolMXBean::getMemoryUsed).sum();
        if (offHeap > cap - inUse) {
            throw new LoadException("the plan puts " + ByteSizes.format(offHeap) + " off-heap, but direct memory is capped at "
                    + ByteSizes.format(cap) + " (-XX:MaxDirectMemorySize, else the heap's maximum), " + ByteSizes.format(inUse)
                    + " already in use: raise it, e.g. JAVA_OPTS=-XX:MaxDirectMemorySize=" + megabytesAbove(offHeap + inUse) + "m", null);
        }
    }

    /** Enough for {@code bytes} and some room for what else the process holds off-heap, in MiB. */
    private static long megabytesAbove(long bytes) {
        return ((bytes + (1L << 20) - 1) >> 20) + 64;
    }

    private static LoadException outOfMemory(OutOfMemoryError e, DomainBytes planned) {
        String message = String.valueOf(e.getMessage());
        if (message.contains("irect buffer")) {
            return new LoadException("direct memory ran out holding " + ByteSizes.format(planned.offHeap()) + " off-heap ("
                    + message + "): raise -XX:MaxDirectMemorySize (JAVA_OPTS)", e);
        }
        return new LoadException("the heap ran out holding " + ByteSizes.format(planned.heap()) + " on the heap (" + message
                + "): raise -Xmx (JAVA_OPTS)", e);
    }
}
