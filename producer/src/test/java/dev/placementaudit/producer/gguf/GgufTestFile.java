package dev.placementaudit.producer.gguf;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes GGUF files for tests, byte by byte as the spec lays them out. Tensor data is left sparse (zeros the file
 * system does not store), so a "1 GB" model costs nothing; every field can be bent to make a corrupt variant.
 */
public final class GgufTestFile {
    private final ByteArrayOutputStream header = new ByteArrayOutputStream();
    private final List<byte[]> kvs = new ArrayList<>();
    private final List<Tensor> tensors = new ArrayList<>();
    private long magic = 0x46554747L;
    private long version = 3;
    private long alignment = 32;
    private long truncateBy;
    private long tensorCountOverride = -1;

    record Tensor(String name, long[] dims, long type, long offset) {
    }

    public GgufTestFile version(long v) {
        version = v;
        return this;
    }

    public GgufTestFile magic(long m) {
        magic = m;
        return this;
    }

    public GgufTestFile alignment(long a) {
        alignment = a;
        kvs.add(kv("general.alignment", 4, le32(a)));
        return this;
    }

    public GgufTestFile string(String key, String value) {
        kvs.add(kv(key, 8, str(value)));
        return this;
    }

    public GgufTestFile u32(String key, long value) {
        kvs.add(kv(key, 4, le32(value)));
        return this;
    }

    public GgufTestFile stringArray(String key, List<String> values) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(le32(8));
        out.writeBytes(le64(values.size()));
        values.forEach(v -> out.writeBytes(str(v)));
        kvs.add(kv(key, 9, out.toByteArray()));
        return this;
    }

    public GgufTestFile rawKv(String key, long type, byte[] value) {
        kvs.add(kv(key, type, value));
        return this;
    }

    /** A tensor placed after the previous one, aligned. */
    public GgufTestFile tensor(String name, long type, long bytes, long... dims) {
        long offset = 0;
        if (!tensors.isEmpty()) {
            offset = nextOffset;
        }
        tensors.add(new Tensor(name, dims, type, offset));
        nextOffset = align(offset + bytes);
        lastEnd = offset + bytes;
        return this;
    }

    /** A tensor at an explicit data offset (to make overlaps and misalignment). */
    public GgufTestFile tensorAt(String name, long type, long offset, long bytes, long... dims) {
        tensors.add(new Tensor(name, dims, type, offset));
        lastEnd = Math.max(lastEnd, offset + bytes);
        nextOffset = align(lastEnd);
        return this;
    }

    private long nextOffset;
    private long lastEnd;

    public GgufTestFile truncateBy(long bytes) {
        truncateBy = bytes;
        return this;
    }

    public GgufTestFile claimTensorCount(long count) {
        tensorCountOverride = count;
        return this;
    }

    public Path writeTo(Path file) throws IOException {
        header.reset();
        header.writeBytes(le32(magic));
        header.writeBytes(le32(version));
        header.writeBytes(le64(tensorCountOverride >= 0 ? tensorCountOverride : tensors.size()));
        header.writeBytes(le64(kvs.size()));
        kvs.forEach(header::writeBytes);
        for (Tensor t : tensors) {
            header.writeBytes(str(t.name));
            header.writeBytes(le32(t.dims.length));
            for (long d : t.dims) {
                header.writeBytes(le64(d));
            }
            header.writeBytes(le32(t.type));
            header.writeBytes(le64(t.offset));
        }
        long dataStart = align(header.size());
        long size = dataStart + lastEnd - truncateBy;
        Files.write(file, header.toByteArray());
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(Math.max(0, size));
        }
        return file;
    }

    long dataStart() {
        return align(header.size());
    }

    private long align(long x) {
        return x + (alignment - x % alignment) % alignment;
    }

    static byte[] kv(String key, long type, byte[] value) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(str(key));
        out.writeBytes(le32(type));
        out.writeBytes(value);
        return out.toByteArray();
    }

    static byte[] str(String s) {
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(le64(utf8.length));
        out.writeBytes(utf8);
        return out.toByteArray();
    }

    static byte[] le32(long v) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt((int) v).array();
    }

    static byte[] le64(long v) {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
    }
}
