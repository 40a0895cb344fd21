package dev.placementaudit.resolution.llamacpp;

import dev.placementaudit.core.format.GgmlType;
import dev.placementaudit.core.placement.MemoryDomain;
import dev.placementaudit.resolution.llamacpp.CpuFeatures.Feature;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Where llama.cpp's CPU backend puts each weight of a GGUF at load, and why, for the build {@link #BUILD}
 * (de.kherud:llama 4.1.0 ships it). The rules, from that build's {@code ggml-cpu-aarch64.cpp} and
 * {@code llama-model.cpp}, checked against the build's own log on x86 with AVX2 (docs/runtimes.md):
 *
 * <ul>
 *   <li>A weight goes to the first buffer type that supports its op: the repack buffer ({@value #REPACK}) before plain
 *   host memory. The repack buffer takes only a matrix multiplication ({@code MUL_MAT}, 2-D; {@code MUL_MAT_ID}, 3-D)
 *   of a type with a kernel layout for this CPU: Q4_0 as {@code q4_0_8x8} on AVX2 (or 256-bit SVE with int8 matmul)
 *   with rows a multiple of 8, else {@code q4_0_4x8} on NEON with int8 matmul, else {@code q4_0_4x4} on NEON with
 *   dot product (rows a multiple of 4); IQ4_NL as {@code iq4_nl_4x4} on NEON with dot product. Nothing else is
 *   repacked by this build (Q4_K and Q8_0 layouts came later).</li>
 *   <li>The token embedding is read by row ({@code GET_ROWS}), norms are multiplied element-wise: neither is a
 *   matrix multiplication, so they stay in host memory's buffer type.</li>
 *   <li>With mmap on, host-memory weights are the file's pages: one {@value #MAPPED} buffer spanning the file from the
 *   first such weight to the end of the last (weights repacked in between included in the span). With mmap off they
 *   are copied into a {@value #HOST} buffer. Repacked weights are always copied; an allocated buffer holds each weight
 *   padded to 32 bytes.</li>
 * </ul>
 */
public final class LlamaCppPolicy {
    /** The llama.cpp build these rules are read from. */
    public static final String BUILD = "b4916";
    public static final String MAPPED = "CPU_Mapped";
    public static final String REPACK = "CPU_AARCH64";
    public static final String HOST = "CPU";
    private static final int ALIGNMENT = 32;

    /** A weight as its GGUF header gives it: dims innermost first, where its data starts in the file. */
    public record Weight(String name, GgmlType type, long[] dims, long fileOffset) {
        public long bytes() {
            long n = 1;
            for (long d : dims) {
                n *= d;
            }
            return type.bytesFor(n);
        }

        long rows() {
            return dims.length > 1 ? dims[1] : 1;
        }
    }

    /** Why a weight lands where it does. */
    public enum Reason {
        REPACKED("repacked into host memory for a CPU kernel layout"),
        ROW_READ("read by row (get_rows), which the repack buffer does not serve"),
        NOT_A_MATRIX("not a matrix multiplication's weight"),
        NO_LAYOUT("this build has no repack layout for its type on this CPU"),
        ROWS_NOT_MULTIPLE("its rows are not a multiple of the repack layout's"),
        NO_REPACK_BUFFER("this llama.cpp was built without the repack buffer");

        private final String text;

        Reason(String text) {
            this.text = text;
        }

        public String text() {
            return text;
        }
    }

    /** One weight's placement: its buffer, domain, the layout it was repacked to (if so), and why. */
    public record Placed(Weight weight, String buffer, MemoryDomain domain, Optional<String> layout, Reason reason, String detail) {
    }

    /** Every weight's placement and each buffer's size as llama.cpp allocates it. */
    public record Plan(String build, CpuFeatures cpu, boolean mmap, List<Placed> weights, Map<String, Long> buffers) {
    }

    private LlamaCppPolicy() {
    }

    public static Plan plan(List<Weight> weights, CpuFeatures cpu, boolean mmap) {
        List<Placed> placed = new ArrayList<>();
        Map<String, Long> buffers = new LinkedHashMap<>();
        long mappedFirst = Long.MAX_VALUE;
        long mappedLast = -1;
        for (Weight w : weights) {
            Optional<String> layout = layout(w, cpu);
            Reason reason = layout.isPresent() ? Reason.REPACKED : whyNot(w, cpu);
            String buffer = layout.isPresent() ? REPACK : mmap ? MAPPED : HOST;
            MemoryDomain domain = buffer.equals(MAPPED) ? MemoryDomain.MMAP_FILE : MemoryDomain.HOST_OFFHEAP;
            placed.add(new Placed(w, buffer, domain, layout, reason, detail(w, cpu, mmap, reason, layout)));
            if (buffer.equals(MAPPED)) {
                mappedFirst = Math.min(mappedFirst, w.fileOffset());
                mappedLast = Math.max(mappedLast, w.fileOffset() + w.bytes());
            } else {
                buffers.merge(buffer, padded(w.bytes()), Long::sum);
            }
        }
        if (mappedLast >= 0) {
            buffers.put(MAPPED, mappedLast - mappedFirst);
        }
        return new Plan(BUILD, cpu, mmap, List.copyOf(placed), Map.copyOf(buffers));
    }

    /** The kernel layout this build repacks the weight to on {@code cpu}, if any. */
    static Optional<String> layout(Weight w, CpuFeatures cpu) {
        if (!cpu.has(Feature.AARCH64_REPACK) || !isMatMul(w)) {
            return Optional.empty();
        }
        long rows = w.rows();
        if (w.type() == GgmlType.Q4_0) {
            if ((cpu.has(Feature.AVX2) || (cpu.has(Feature.SVE_256) && cpu.has(Feature.MATMUL_INT8))) && rows % 8 == 0) {
                return Optional.of("q4_0_8x8");
            }
            if (cpu.has(Feature.NEON) && cpu.has(Feature.MATMUL_INT8) && rows % 4 == 0) {
                return Optional.of("q4_0_4x8");
            }
            if (cpu.has(Feature.NEON) && cpu.has(Feature.DOTPROD) && rows % 4 == 0) {
                return Optional.of("q4_0_4x4");
            }
        } else if (w.type() == GgmlType.IQ4_NL && cpu.has(Feature.NEON) && cpu.has(Feature.DOTPROD) && rows % 4 == 0) {
            return Optional.of("iq4_nl_4x4");
        }
        return Optional.empty();
    }

    /** The op llama.cpp loads the weight for: the embedding is read by row, 1-D weights are element-wise. */
    private static boolean isMatMul(Weight w) {
        return !isRowRead(w) && (w.dims().length == 2 || w.dims().length == 3);
    }

    private static boolean isRowRead(Weight w) {
        return w.name().equals("token_embd.weight");
    }

    private static Reason whyNot(Weight w, CpuFeatures cpu) {
        if (!cpu.has(Feature.AARCH64_REPACK)) {
            return Reason.NO_REPACK_BUFFER;
        }
        if (isRowRead(w)) {
            return Reason.ROW_READ;
        }
        if (!isMatMul(w)) {
            return Reason.NOT_A_MATRIX;
        }
        boolean typeHasLayout = (w.type() == GgmlType.Q4_0 && (cpu.has(Feature.AVX2) || cpu.has(Feature.NEON) && cpu.has(Feature.DOTPROD)))
                || (w.type() == GgmlType.IQ4_NL && cpu.has(Feature.NEON) && cpu.has(Feature.DOTPROD));
        return typeHasLayout ? Reason.ROWS_NOT_MULTIPLE : Reason.NO_LAYOUT;
    }

    private static String detail(Weight w, CpuFeatures cpu, boolean mmap, Reason reason, Optional<String> layout) {
        String type = w.type().name().toLowerCase(Locale.ROOT);
        return switch (reason) {
            case REPACKED -> "repacked as " + layout.orElseThrow() + " for " + cpu.name() + " (" + REPACK + ")";
            case ROW_READ, NOT_A_MATRIX -> reason.text() + "; " + (mmap ? "kept in the file's pages" : "copied (mmap off)");
            case NO_LAYOUT -> "llama.cpp " + BUILD + " repacks no " + type + " for " + cpu.name() + "; " + (mmap ? "kept in the file's pages"
                    : "copied (mmap off)");
            case ROWS_NOT_MULTIPLE -> w.rows() + " rows, not a multiple of the " + type + " layout's; " + (mmap ? "kept in the file's pages"
                    : "copied (mmap off)");
            case NO_REPACK_BUFFER -> reason.text() + "; " + (mmap ? "kept in the file's pages" : "copied (mmap off)");
        };
    }

    private static long padded(long bytes) {
        return (bytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    }
}
