package dev.placementaudit.bench;

import dev.placementaudit.producer.model.ModelFiles;
import dev.placementaudit.producer.model.StoredModel;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The model file readers, header only: a 4.3 GB GGUF of 291 tensors (Llama 3.1 8B's count, F16 weights) and files
 * of 10,000 tensors in both formats. The files are sparse (their data is never written), so what is timed is the
 * reading of headers a real file would have; a reader that touched the data would show it here at once.
 *
 * <p>{@code bench/run.sh jmh ReaderBenchmark} (JMH options pass through, e.g. {@code -f 1 -wi 3 -i 5}).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgs = "-Xmx512m")
public class ReaderBenchmark {
    /** {@code gguf-4.3GB}: 291 tensors over 4.3 GB; {@code gguf-10k} and {@code safetensors-10k}: 10,000 small tensors. */
    @Param({"gguf-4.3GB", "gguf-10k", "safetensors-10k"})
    public String file;

    private Path dir;
    private Path model;

    @Setup(Level.Trial)
    public void write() throws IOException {
        dir = Files.createTempDirectory("pa-reader-bench");
        model = switch (file) {
            case "gguf-4.3GB" -> gguf(dir.resolve("big.gguf"), 291, 7_388_160L);
            case "gguf-10k" -> gguf(dir.resolve("many.gguf"), 10_000, 4_096);
            case "safetensors-10k" -> safetensors(dir.resolve("many.safetensors"), 10_000, 4_096);
            default -> throw new IllegalArgumentException(file);
        };
    }

    @TearDown(Level.Trial)
    public void delete() throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    @Benchmark
    public StoredModel read() {
        return ModelFiles.read(model);
    }

    /** GGUF v3: F16 tensors of {@code elements} each, 32-byte aligned, data left as a hole. */
    static Path gguf(Path path, int tensors, long elements) throws IOException {
        ByteArrayOutputStream header = new ByteArrayOutputStream();
        header.write("GGUF".getBytes(StandardCharsets.US_ASCII));
        u32(header, 3);
        u64(header, tensors);
        u64(header, 1);
        string(header, "general.name");
        u32(header, 8);
        string(header, "reader-bench");
        long offset = 0;
        long bytes = elements * 2;
        for (int i = 0; i < tensors; i++) {
            string(header, "blk." + i / 9 + ".weight_" + i % 9);
            u32(header, 1);
            u64(header, elements);
            u32(header, 1); // F16
            u64(header, offset);
            offset += (bytes + 31) / 32 * 32;
        }
        long dataStart = (header.size() + 31L) / 32 * 32;
        return sparse(path, header.toByteArray(), dataStart + offset);
    }

    /** safetensors: F16 tensors of {@code elements} each, back to back, data left as a hole. */
    static Path safetensors(Path path, int tensors, long elements) throws IOException {
        StringBuilder json = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
        long offset = 0;
        for (int i = 0; i < tensors; i++) {
            json.append(",\"model.layers.").append(i / 9).append(".w").append(i % 9).append("\":{\"dtype\":\"F16\",\"shape\":[")
                    .append(elements).append("],\"data_offsets\":[").append(offset).append(',').append(offset + elements * 2).append("]}");
            offset += elements * 2;
        }
        byte[] body = json.append('}').toString().getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream header = new ByteArrayOutputStream();
        u64(header, body.length);
        header.write(body);
        return sparse(path, header.toByteArray(), header.size() + offset);
    }

    private static Path sparse(Path path, byte[] header, long size) throws IOException {
        try (RandomAccessFile out = new RandomAccessFile(path.toFile(), "rw")) {
            out.write(header);
            out.setLength(size);
        }
        return path;
    }

    private static void string(ByteArrayOutputStream out, String s) {
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        u64(out, utf8.length);
        out.writeBytes(utf8);
    }

    private static void u32(ByteArrayOutputStream out, long v) {
        out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt((int) v).array());
    }

    private static void u64(ByteArrayOutputStream out, long v) {
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array());
    }
}
