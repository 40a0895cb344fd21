package dev.placementaudit.producer.gguf;

import dev.placementaudit.core.format.GgmlType;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Reads a GGUF header (ggml docs/gguf.md): magic, version 2 or 3, metadata key-values, tensor infos. Streams the
 * header only - the data section is never read - and checks every tensor against the file's real size, so a
 * truncated download is caught here, with the byte offset, rather than at load on a phone.
 */
public final class GgufReader {
    private static final long MAGIC = 0x46554747L; // "GGUF" as a little-endian u32
    /**
     * The most tensors a file may declare: far above any real model (a 405B model has about 1,100) and low enough that
     * their infos fit a small heap (about 300 bytes each). Above it the file is refused, not read until memory runs out.
     */
    public static final long MAX_TENSORS = 200_000;
    private static final long MAX_KEYS = 1L << 20;
    private static final long MAX_KEY_BYTES = 65_535;
    private static final long MAX_STRING_BYTES = 1L << 24;
    private static final long MAX_TENSOR_NAME_BYTES = 64;
    private static final int MAX_DIMS = 4;
    private static final int MAX_ARRAY_DEPTH = 4;
    private static final int DEFAULT_ALIGNMENT = 32;

    private GgufReader() {
    }

    public static GgufFile read(Path file) {
        try (LittleEndianReader in = new LittleEndianReader(file)) {
            return read(file, Files.size(file), in);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    private static GgufFile read(Path file, long fileSize, LittleEndianReader in) throws IOException {
        long magic = in.u32();
        if (magic != MAGIC) {
            throw in.error(0, String.format("not a GGUF file: magic is 0x%08x, expected 0x%08x (\"GGUF\")", magic, MAGIC));
        }
        long version = in.u32();
        if ((version & 0xFFFF) == 0 && version != 0) {
            throw in.error(4, "version " + version + " looks byte-swapped: big-endian GGUF files are not supported");
        }
        if (version == 1) {
            throw in.error(4, "GGUF version 1 (32-bit counts) is not supported; re-convert the model to v3");
        }
        if (version < 2 || version > 3) {
            throw in.error(4, "unsupported GGUF version " + version + " (supported: 2, 3)");
        }
        long tensorCount = count(in, MAX_TENSORS, "tensor count");
        long keyCount = count(in, MAX_KEYS, "metadata key count");

        List<String> warnings = new ArrayList<>();
        Map<String, String> metadata = new LinkedHashMap<>();
        long alignment = DEFAULT_ALIGNMENT;
        for (long k = 0; k < keyCount; k++) {
            String key = in.string(MAX_KEY_BYTES, "metadata key #" + k);
            long typeAt = in.position();
            long type = in.u32();
            if (key.equals("general.alignment")) {
                // ggml's gguf_init reads it as a UINT32 and refuses the file otherwise, and any power of two is legal.
                if (type != 4) {
                    throw in.error(typeAt, "general.alignment is of type " + typeName(type) + ", not UINT32 (ggml refuses such a file)");
                }
                alignment = in.u32();
                if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
                    throw in.error(typeAt + 4, "general.alignment " + alignment + " is not a power of two");
                }
                metadata.put(uniqueKey(metadata, key), Long.toString(alignment));
                continue;
            }
            metadata.put(uniqueKey(metadata, key), value(in, type, typeAt, key, 0));
        }

        List<Info> infos = new ArrayList<>();
        for (long t = 0; t < tensorCount; t++) {
            infos.add(info(in, t, alignment, fileSize));
        }
        long headerEnd = in.position();
        long dataStart = align(headerEnd, alignment);
        // A file with no tensors needs no data section, and llama.cpp's converter ends vocab-only files right after the
        // header, before the aligned offset where data would begin; every reference reader reads them.
        if (dataStart > fileSize && !infos.isEmpty()) {
            throw in.error(headerEnd, "file ends before its data section (data would start at " + dataStart + ", file has " + fileSize + " bytes)");
        }
        return new GgufFile(file, version, alignment, dataStart, fileSize, metadata, tensors(in, infos, dataStart, fileSize, warnings), warnings);
    }

    private static Info info(LittleEndianReader in, long index, long alignment, long fileSize) throws IOException {
        long at = in.position();
        String name = in.string(MAX_TENSOR_NAME_BYTES, "name of tensor #" + index);
        long dimsAt = in.position();
        long dimCount = in.u32();
        if (dimCount > MAX_DIMS) {
            throw in.error(dimsAt, "tensor '" + name + "' has " + dimCount + " dimensions; GGUF allows at most " + MAX_DIMS);
        }
        List<Long> dims = new ArrayList<>();
        // A 0-dimensional tensor is a scalar: one element (the product of no dimensions), as ggml and gguf-py count it.
        long elements = 1;
        for (int d = 0; d < dimCount; d++) {
            long dimAt = in.position();
            long dim = in.u64();
            if (dim < 0) {
                throw in.error(dimAt, "tensor '" + name + "' dimension " + d + " is " + Long.toUnsignedString(dim) + ", beyond 2^63");
            }
            try {
                elements = Math.multiplyExact(elements, dim);
            } catch (ArithmeticException e) {
                throw in.error(dimAt, "tensor '" + name + "' has more than 2^63 elements");
            }
            dims.add(dim);
        }
        long typeAt = in.position();
        long typeId = in.u32();
        long offsetAt = in.position();
        long offset = in.u64();
        // Said first: an offset beyond the file is the problem, whatever its alignment (2^64 - 32 is a multiple of 32).
        if (offset < 0 || offset > fileSize) {
            throw in.error(offsetAt, "tensor '" + name + "' data offset " + Long.toUnsignedString(offset) + " lies past the end of the file ("
                    + fileSize + " bytes)");
        }
        if (offset % alignment != 0) {
            throw in.error(offsetAt, "tensor '" + name + "' offset " + Long.toUnsignedString(offset) + " is not a multiple of the alignment " + alignment);
        }
        return new Info(name, dims, elements, typeId, typeAt, offset, at);
    }

    private static List<GgufTensor> tensors(LittleEndianReader in, List<Info> infos, long dataStart, long fileSize, List<String> warnings) {
        List<Info> byOffset = new ArrayList<>(infos);
        byOffset.sort(Comparator.comparingLong(Info::offset));
        Map<String, GgufTensor> tensors = new LinkedHashMap<>();
        infos.forEach(info -> tensors.put(info.name, null));
        long previousEnd = 0;
        String previous = null;
        for (int i = 0; i < byOffset.size(); i++) {
            Info info = byOffset.get(i);
            Optional<GgmlType> type = GgmlType.byId(info.typeId);
            long bytes;
            if (type.isPresent()) {
                if (!type.get().fillsWholeBlocks(info.elements)) {
                    throw in.error(info.at, "tensor '" + info.name + "' has " + info.elements + " elements, not a multiple of "
                            + type.get() + "'s block of " + type.get().blockSize());
                }
                // ggml quantizes row by row: each row (the first, fastest-varying dimension) must hold whole blocks.
                if (!info.dims.isEmpty() && info.dims.get(0) % type.get().blockSize() != 0) {
                    throw in.error(info.at, "tensor '" + info.name + "' has rows of " + info.dims.get(0) + " elements, not a multiple of "
                            + type.get() + "'s block of " + type.get().blockSize());
                }
                if (type.get() == GgmlType.I2_S) {
                    warnings.add("tensor '" + info.name + "' has ggml type 36, read as bitnet.cpp's I2_S; upstream ggml has no type 36");
                }
                bytes = type.get().bytesFor(info.elements);
            } else {
                long end = i + 1 < byOffset.size() ? byOffset.get(i + 1).offset : fileSize - dataStart;
                bytes = Math.max(0, end - info.offset);
                warnings.add("tensor '" + info.name + "' has unknown ggml type " + info.typeId + "; its size is estimated as the "
                        + bytes + "-byte gap to the next tensor (padding included)");
            }
            if (info.offset < previousEnd) {
                throw in.error(info.at, "tensor '" + info.name + "' at data offset " + info.offset + " overlaps '" + previous
                        + "', which ends at " + previousEnd);
            }
            long absolute = dataStart + info.offset;
            if (absolute + bytes > fileSize) {
                throw in.error(absolute, "tensor '" + info.name + "' (" + bytes + " bytes at " + absolute + ") extends past the end of the file ("
                        + fileSize + " bytes): the file is truncated");
            }
            previousEnd = info.offset + bytes;
            previous = info.name;
            if (tensors.get(info.name) != null) {
                throw in.error(info.at, "tensor name '" + info.name + "' appears twice");
            }
            tensors.put(info.name, new GgufTensor(info.name, info.dims, info.typeId, type, info.offset, absolute, info.elements, bytes));
        }
        return List.copyOf(tensors.values());
    }

    /** Scalars as text; arrays as {@code [TYPE x n]} (a tokenizer's 128k strings are skipped, not kept). */
    private static String value(LittleEndianReader in, long type, long at, String key, int depth) throws IOException {
        return switch ((int) type) {
            case 0 -> Integer.toString(in.u8());
            case 1 -> Integer.toString((byte) in.u8());
            case 2 -> Long.toString(readU16(in));
            case 3 -> Integer.toString((short) readU16(in));
            case 4 -> Long.toString(in.u32());
            case 5 -> Integer.toString((int) in.u32());
            case 6 -> Float.toString(Float.intBitsToFloat((int) in.u32()));
            case 7 -> {
                int b = in.u8();
                if (b > 1) {
                    throw in.error(in.position() - 1, "metadata '" + key + "' is a BOOL with value " + b);
                }
                yield Boolean.toString(b == 1);
            }
            case 8 -> in.string(MAX_STRING_BYTES, "metadata '" + key + "'");
            case 9 -> array(in, key, depth);
            case 10 -> Long.toUnsignedString(in.u64());
            case 11 -> Long.toString(in.u64());
            case 12 -> Double.toString(Double.longBitsToDouble(in.u64()));
            default -> throw in.error(at, "metadata '" + key + "' has unknown value type " + type);
        };
    }

    private static long readU16(LittleEndianReader in) throws IOException {
        return in.u8() | ((long) in.u8() << 8);
    }

    private static String array(LittleEndianReader in, String key, int depth) throws IOException {
        if (depth >= MAX_ARRAY_DEPTH) {
            throw in.error(in.position(), "metadata '" + key + "' nests arrays deeper than " + MAX_ARRAY_DEPTH);
        }
        long elementTypeAt = in.position();
        long elementType = in.u32();
        long count = in.u64();
        if (count < 0 || count > (1L << 32)) {
            throw in.error(elementTypeAt + 4, "metadata '" + key + "' array count " + Long.toUnsignedString(count) + " is implausible");
        }
        int fixed = fixedWidth(elementType);
        if (fixed > 0) {
            if (Math.multiplyHigh(count, fixed) != 0) {
                throw in.error(elementTypeAt + 4, "metadata '" + key + "' array is too large");
            }
            in.skip(count * fixed);
        } else {
            for (long i = 0; i < count; i++) {
                value(in, elementType, elementTypeAt, key + "[" + i + "]", depth + 1);
            }
        }
        return "[" + typeName(elementType) + " x " + count + "]";
    }

    private static int fixedWidth(long type) {
        return switch ((int) type) {
            case 0, 1, 7 -> 1;
            case 2, 3 -> 2;
            case 4, 5, 6 -> 4;
            case 10, 11, 12 -> 8;
            default -> 0;
        };
    }

    private static String typeName(long type) {
        String[] names = {"UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"};
        return type >= 0 && type < names.length ? names[(int) type] : "TYPE_" + type;
    }

    private static long count(LittleEndianReader in, long max, String what) throws IOException {
        long at = in.position();
        long count = in.u64();
        if (count < 0 || count > max) {
            throw in.error(at, what + " " + Long.toUnsignedString(count) + " is implausible (limit " + max + ")");
        }
        return count;
    }

    /** SKaiNET keeps duplicate keys as {@code <key>_dup_<i>}; so do we, so nothing a file says is lost. */
    private static String uniqueKey(Map<String, String> metadata, String key) {
        if (!metadata.containsKey(key)) {
            return key;
        }
        int i = 1;
        while (metadata.containsKey(key + "_dup_" + i)) {
            i++;
        }
        return key + "_dup_" + i;
    }

    static long align(long x, long alignment) {
        return x + (alignment - x % alignment) % alignment;
    }

    private record Info(String name, List<Long> dims, long elements, long typeId, long typeAt, long offset, long at) {
    }
}
