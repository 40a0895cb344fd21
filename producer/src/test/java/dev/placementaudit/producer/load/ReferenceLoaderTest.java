package dev.placementaudit.producer.load;

import dev.placementaudit.core.placement.PlannerProfile;
import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.LoadResolved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.ObservedDomain;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.producer.model.DeploymentTarget;
import dev.placementaudit.producer.model.FormPolicy;
import dev.placementaudit.producer.model.ModelFiles;
import dev.placementaudit.producer.model.ModelLoadedBuilder;
import dev.placementaudit.producer.model.Platforms;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.sample.SampleModelFile;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.resolution.LoadResolution;
import dev.placementaudit.resolution.LoadValidator;
import dev.placementaudit.resolution.Provenance;
import dev.placementaudit.schemas.EventSerde;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** The reference loader on sample models (a real model's layout, sparse zeros for weights): held as planned, and measured. */
class ReferenceLoaderTest {
    private static final long MB = 1024 * 1024;
    @TempDir
    static Path dir;
    private static Path qwen;

    @BeforeAll
    static void sampleModel() {
        qwen = dir.resolve("qwen.gguf");
        SampleModelFile.write(ModelCatalog.byId("qwen2.5-0.5b-q8_0"), SampleModelFile.Format.GGUF, qwen);
    }

    @Test
    void offHeapTensorsAreHeldInDirectBuffersTheDirectPoolSeesWithinFivePercentAndAMegabyte() {
        ModelLoaded load = load(qwen, "desktop", "jvm");

        try (LoadedModel loaded = new ReferenceLoader().load(qwen, load, true)) {
            DomainBytes planned = loaded.planned();
            assertThat(planned.offHeap()).as("desktop keeps the big weights off-heap").isGreaterThan(400 * MB);
            assertThat(loaded.runtime()).isEqualTo(planned);
            assertThat(loaded.observed().offHeap()).isCloseTo(planned.offHeap(), within(planned.offHeap() / 20 + MB));
            assertThat(loaded.departures()).isEmpty();
            if (new MemoryProbe().hasProc()) {
                // Direct buffers are zeroed as they are allocated, so their pages are anonymous resident memory.
                assertThat(loaded.anonRssDelta()).isGreaterThan(planned.offHeap() / 2);
            }
        }
    }

    @Test
    void mappedTensorsAreInTheMappedPool() {
        ModelLoaded load = load(qwen, "edge", "android");

        try (LoadedModel loaded = new ReferenceLoader().load(qwen, load, true)) {
            DomainBytes planned = loaded.planned();
            assertThat(planned.mapped()).as("edge on android maps every Q8_0 weight").isGreaterThan(400 * MB);
            assertThat(planned.offHeap()).isZero();
            // The pool counts each mapping from its page boundary: at most a page more per tensor.
            assertThat(loaded.observed().mapped()).isBetween(planned.mapped(), planned.mapped() + 4096L * load.getTensors().size());
            assertThat(loaded.observed().offHeap()).isLessThan(MB);
        }
    }

    @Test
    @EnabledOnOs(OS.LINUX)
    void onLinuxMappedTensorsAreInTheModelFilesSmapsEntry() {
        ModelLoaded load = load(qwen, "edge", "android");

        try (LoadedModel loaded = new ReferenceLoader().load(qwen, load, true)) {
            MemoryProbe.FileMappings file = loaded.fileMappings();
            assertThat(file).as("/proc/self/smaps read").isNotNull();
            assertThat(file.mappings()).isEqualTo(load.getTensors().size());
            assertThat(file.sizeBytes()).isBetween(loaded.planned().mapped(), loaded.planned().mapped() + 8192L * load.getTensors().size());
            // Nothing read yet: a mapping is paged in as it is used (sparse zeros, here).
            assertThat(file.residentBytes()).isLessThan(loaded.planned().mapped());
        }
    }

    @Test
    void heapTensorsAreHeldInHeapArrays() {
        ModelLoaded load = load(qwen, "mobile-2gb", "js");

        try (LoadedModel loaded = new ReferenceLoader().load(qwen, load, true)) {
            assertThat(loaded.planned().heap()).isGreaterThan(400 * MB);
            assertThat(loaded.runtime()).isEqualTo(loaded.planned());
            // Heap in use is read after a collection request. It is more than planned, and that is what the heap holds:
            // G1 gives each array past half a region whole regions of its own, so a 4.1 MB tensor takes 5 MB.
            long planned = loaded.planned().heap();
            assertThat(loaded.observed().heap()).isBetween(planned - planned / 20, planned + planned / 5 + 16 * MB);
        }
    }

    @Test
    void theLoadAsReportedCarriesTheLoadersDecisionsWhichTheReferenceFindsEqualAndTheObservationDecodes() {
        ModelLoaded load = load(qwen, "edge", "android");

        try (LoadedModel loaded = new ReferenceLoader().load(qwen, load, true)) {
            ModelLoaded reported = loaded.reported();
            assertThat(reported.getTensors()).allSatisfy(t -> assertThat(t.getRuntime()).isNotNull());
            LoadResolved summary = new LoadResolution("test").resolve(new LoadValidator(10_000).validate(reported),
                    new Provenance("t", 0, 0), Instant.now()).summary();
            assertThat(summary.getRuntimeReportedTensors()).isEqualTo(load.getTensors().size());
            assertThat(summary.getDivergedTensors()).isZero();

            LoadObserved observation = loaded.observation(Instant.parse("2026-12-04T10:00:00Z"), "test");
            LoadObserved decoded = EventSerde.of(LoadObserved.class).decode(EventSerde.of(LoadObserved.class).encode(observation));
            assertThat(decoded.getLoadId()).isEqualTo(load.getLoadId());
            assertThat(decoded.getDeploymentId()).isEqualTo("d1");
            assertThat(decoded.getMethod().getName()).isEqualTo(ReferenceLoader.METHOD);
            assertThat(decoded.getMethod().getLimits()).isNotEmpty();
            assertThat(decoded.getMappedAfterBytes() - decoded.getMappedBeforeBytes()).isEqualTo(loaded.observed().mapped());
            assertThat(decoded.getTensors()).hasSize(load.getTensors().size())
                    .allSatisfy(t -> assertThat(t.getDomain()).isEqualTo(ObservedDomain.MMAP_FILE));
        }
    }

    @Test
    void aTensorThatCannotBeMappedIsHeldOffHeapAndReportedSoWhichTheReferenceCallsDiverged() throws Exception {
        ModelLoaded load = load(qwen, "edge", "android");
        // The same header over a file cut short of its last tensor: that tensor's range cannot be mapped.
        Path cut = dir.resolve("cut.gguf");
        Files.copy(qwen, cut);
        TensorInfo last = load.getTensors().get(load.getTensors().size() - 1);
        try (RandomAccessFile file = new RandomAccessFile(cut.toFile(), "rw")) {
            file.setLength(last.getFileOffset() + 1);
        }

        try (LoadedModel loaded = new ReferenceLoader().load(cut, load, true)) {
            assertThat(loaded.departures()).singleElement().asString().startsWith(last.getName() + ": planned MMAP_FILE, held HOST_OFFHEAP")
                    .contains("no mappable range");
            assertThat(loaded.runtime().offHeap()).isEqualTo(last.getStoredBytes());
            LoadResolved summary = new LoadResolution("test").resolve(new LoadValidator(10_000).validate(loaded.reported()),
                    new Provenance("t", 0, 0), Instant.now()).summary();
            assertThat(summary.getDivergences()).singleElement().satisfies(d -> {
                assertThat(d.getTensorName()).isEqualTo(last.getName());
                assertThat(d.getRuntimeDomain()).isEqualTo("HOST_OFFHEAP");
                assertThat(d.getReferenceDomain()).isEqualTo("MMAP_FILE");
            });
        }
    }

    @Test
    void withoutMeasuringTheLoadIsTheSameAndAsksForNoReading() {
        ModelLoaded load = load(qwen, "edge", "android");

        try (LoadedModel loaded = new ReferenceLoader().load(qwen, load, false)) {
            assertThat(loaded.measured()).isFalse();
            assertThat(loaded.runtime()).isEqualTo(loaded.planned());
        }
    }

    static ModelLoaded load(Path file, String profile, String platform) {
        StoredModel stored = ModelFiles.read(file);
        PlannerProfile planner = PlannerProfile.byName(profile);
        return ModelLoadedBuilder.build(UUID.randomUUID(), Instant.now(), "qwen", stored,
                new DeploymentTarget("d1", "c1", "h1", "r1", platform, Platforms.byName(platform)),
                new FormPolicy(planner, Platforms.kernels("all")), Map.of(), "test");
    }
}
