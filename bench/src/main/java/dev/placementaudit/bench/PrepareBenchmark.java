package dev.placementaudit.bench;

import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.producer.simulate.FleetSimulator;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.schemas.LoadLayouts;
import dev.placementaudit.worker.WorkerVersion;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.resolution.Provenance;
import dev.placementaudit.resolution.ResolvedLoad;
import dev.placementaudit.resolution.ValidLoad;
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
import org.openjdk.jmh.infra.Blackhole;

import java.nio.charset.StandardCharsets;
import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The worker's CPU per record, without Kafka: one Llama 3.2 1B Q4_K_M load (146 tensors) through each stage the
 * resolver loop runs before it sends (decode, validate, resolve, which also encodes every decision), through all
 * of them, and through all of them for a load whose layout the worker has met before ({@code prepareKnownLayout}). On a machine
 * whose cores the broker shares, this CPU is what stands between the worker and the raw Kafka baseline
 * (WorkerBench); here it is measured alone, on one thread, with JMH's warm-up and forks.
 *
 * <p>{@code bench/run.sh prepare} (JMH options pass through, e.g. {@code -f 1 -wi 3 -i 5}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 2, jvmArgs = "-Xmx1g")
public class PrepareBenchmark {
    private final EventSerde<ModelLoaded> loads = EventSerde.of(ModelLoaded.class);
    private final EventSerde<LoadResolved> summaries = EventSerde.of(LoadResolved.class);
    private final LoadLayouts layouts = new LoadLayouts(LoadResolution.LAYOUTS);
    private final LoadValidator validator = new LoadValidator(100_000);
    private final LoadResolution resolution = new LoadResolution(WorkerVersion.resolverVersion());
    private final Provenance source = new Provenance("model-loads", 0, 42);
    private final Instant decidedAt = Instant.parse("2026-12-01T00:00:00Z");
    private byte[] record;
    private ModelLoaded decoded;
    private ValidLoad valid;
    /** The inputs of the load's 146 decision ids, as their definition reads them: load id NUL tensor name NUL version. */
    private byte[][] idInputs;
    private MessageDigest md5;

    @Setup
    public void setUp() {
        FleetSimulator fleet = new FleetSimulator(1, 1, List.of("r1"), List.of(ModelCatalog.LLAMA_3_2_1B_Q4_K_M), List.of(),
                Instant.parse("2026-11-01T00:00:00Z"));
        record = loads.encode(fleet.iterator().next());
        decoded = loads.decode(record);
        valid = validator.validate(decoded);
        idInputs = new byte[decoded.getTensors().size()][];
        for (int i = 0; i < idInputs.length; i++) {
            idInputs[i] = (decoded.getLoadId() + "\u0000" + decoded.getTensors().get(i).getName() + "\u0000" + resolution.resolverVersion())
                    .getBytes(StandardCharsets.UTF_8);
        }
        try {
            md5 = MessageDigest.getInstance("MD5");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * What the decision ids' definition costs a load whatever the code around it (RFC 4122 v3: an MD5 of each tensor's
     * input, the bytes laid out beforehand): the floor under {@code prepareKnownLayout}'s ids.
     */
    @Benchmark
    public void decisionIdDigests(Blackhole out) throws DigestException {
        byte[] hash = new byte[16];
        for (byte[] input : idInputs) {
            md5.update(input);
            md5.digest(hash, 0, 16);
            out.consume(hash);
        }
    }

    @Benchmark
    public ModelLoaded decode() {
        return loads.decode(record);
    }

    @Benchmark
    public ValidLoad validate() {
        return validator.validate(decoded);
    }

    @Benchmark
    public ResolvedLoad resolve() {
        return resolution.resolve(valid, source, decidedAt);
    }

    /** One good record validated and resolved from scratch: the worker's first load of a layout. */
    @Benchmark
    public void prepare(Blackhole out) {
        ResolvedLoad load = resolution.resolve(validator.validate(loads.decode(record)), source, decidedAt);
        out.consume(load.encodedDecisions());
        out.consume(summaries.encode(load.summary()));
    }

    /**
     * What the worker's RecordPreparation does for one good record of a layout it has resolved before (every load of
     * one model file under one policy after the first): read with LoadLayouts (the layout's bytes recognised, the rest
     * decoded), the rest of the load checked, the layout found by the identity of its shared objects.
     */
    @Benchmark
    public void prepareKnownLayout(Blackhole out) {
        ResolvedLoad load = resolution.resolve(layouts.read(record), validator, source, decidedAt);
        out.consume(load.encodedDecisions());
        out.consume(summaries.encode(load.summary()));
    }
}
