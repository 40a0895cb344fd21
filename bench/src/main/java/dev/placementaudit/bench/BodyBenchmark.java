package dev.placementaudit.bench;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import dev.placementaudit.events.ModelLoaded;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;

/**
 * What a collector must do to one of CollectorBench's gzip batches (100 loads of a 1B model) before it can check any
 * of it, on one thread: inflate it, and for JSON read it token by token, the least any JSON reader does to learn where a
 * field ends. The floor under the collector's JSON path, beside the same inflating for Avro frames.
 *
 * <p>{@code bench/run.sh jmh BodyBenchmark}.
 */
@Fork(value = 1, jvmArgs = "-Xmx512m")
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class BodyBenchmark {
    private final JsonFactory json = new JsonFactory();
    private final byte[] buffer = new byte[64 * 1024];
    private byte[] jsonBatch;
    private byte[] avroBatch;

    @Setup
    public void setUp() throws IOException {
        List<ModelLoaded> events = CollectorBench.events(100);
        jsonBatch = CollectorBench.bodies(events, 100).get(0);
        avroBatch = CollectorBench.avroBodies(events, 100).get(0);
    }

    @Benchmark
    public long inflateJson() throws IOException {
        return inflate(jsonBatch);
    }

    @Benchmark
    public long inflateAndTokenizeJson() throws IOException {
        long tokens = 0;
        try (JsonParser parser = json.createParser(new GZIPInputStream(new ByteArrayInputStream(jsonBatch), buffer.length))) {
            while (parser.nextToken() != null) {
                tokens++;
            }
        }
        return tokens;
    }

    @Benchmark
    public long inflateAvro() throws IOException {
        return inflate(avroBatch);
    }

    private long inflate(byte[] batch) throws IOException {
        long inflated = 0;
        try (InputStream in = new GZIPInputStream(new ByteArrayInputStream(batch), buffer.length)) {
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                inflated += n;
            }
        }
        return inflated;
    }
}
