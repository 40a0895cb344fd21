package dev.placementaudit.producer.simulate;

import dev.placementaudit.core.format.TensorEncodings;
import dev.placementaudit.events.EncodingRequestKind;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.model.StoredTensor;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.StreamSupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class FleetSimulatorTest {
    private static final Instant START = Instant.parse("2026-11-01T00:00:00Z");
    private static final List<String> RELEASES = List.of("r1", "r2");

    @Test
    void catalogModelsPriceEveryTensorConsistently() {
        for (ModelCatalog.Archetype archetype : ModelCatalog.ALL) {
            StoredModel model = archetype.model();
            for (StoredTensor tensor : model.tensors()) {
                assertThat(tensor.format().physicalBytes(tensor.elementCount())).as(tensor.name()).hasValue(tensor.storedBytes());
                assertThat(tensor.shape().stream().reduce(1L, Math::multiplyExact)).isEqualTo(tensor.elementCount());
            }
        }
        StoredModel llama = ModelCatalog.LLAMA_3_2_1B_Q4_K_M.model();
        assertThat(llama.tensors()).hasSize(1 + 16 * 9 + 1);
        assertThat(llama.tensorBytes()).isBetween(700_000_000L, 900_000_000L);
    }

    @Test
    void theSameSeedGivesTheSameFleetLoadIdsIncluded() {
        List<ModelLoaded> first = loads(new FleetSimulator(7, 4, RELEASES, List.of(ModelCatalog.QWEN_2_5_0_5B_Q8_0), List.of(), START));
        List<ModelLoaded> again = loads(new FleetSimulator(7, 4, RELEASES, List.of(ModelCatalog.QWEN_2_5_0_5B_Q8_0), List.of(), START));
        List<ModelLoaded> otherSeed = loads(new FleetSimulator(8, 4, RELEASES, List.of(ModelCatalog.QWEN_2_5_0_5B_Q8_0), List.of(), START));

        assertThat(again).isEqualTo(first);
        assertThat(otherSeed.get(0).getLoadId()).isNotEqualTo(first.get(0).getLoadId());
    }

    /**
     * A late share of each release's loads comes after the next release's loads, still dated when it happened: the log
     * then holds loads dated before loads it already holds. Same loads, same seed, same order every time.
     */
    @Test
    void lateLoadsArriveAfterTheNextReleaseDatedWhenTheyHappened() {
        List<String> releases = List.of("r1", "r2", "r3");
        List<ModelLoaded> onTime = loads(new FleetSimulator(3, 20, releases, List.of(ModelCatalog.QWEN_2_5_0_5B_Q8_0), List.of(), START));
        List<ModelLoaded> late = loads(new FleetSimulator(3, 20, releases, List.of(ModelCatalog.QWEN_2_5_0_5B_Q8_0), List.of(), START, 0.25));

        assertThat(late).containsExactlyInAnyOrderElementsOf(onTime);
        assertThat(loads(new FleetSimulator(3, 20, releases, List.of(ModelCatalog.QWEN_2_5_0_5B_Q8_0), List.of(), START, 0.25))).isEqualTo(late);
        int firstR3 = indexOfFirst(late, "r3");
        List<ModelLoaded> r1AfterR2 = late.stream().filter(l -> l.getRelease().equals("r1") && late.indexOf(l) > indexOfFirst(late, "r2")).toList();
        assertThat(r1AfterR2).as("r1 loads reported after r2's").isNotEmpty()
                .allSatisfy(l -> assertThat(late.indexOf(l)).as("before r3's").isLessThan(firstR3));
        assertThat(late.get(late.size() - 1).getRelease()).as("the last release's late loads close the log").isEqualTo("r3");
        Instant latestBefore = late.subList(0, late.indexOf(r1AfterR2.get(0))).stream().map(ModelLoaded::getOccurredAt).max(Instant::compareTo)
                .orElseThrow();
        assertThat(r1AfterR2.get(0).getOccurredAt()).as("dated before loads already in the log").isBefore(latestBefore);
    }

    @Test
    void releasesAreDatedFromTheStartADayApart() {
        Instant start = Instant.parse("2025-03-01T12:00:00Z");
        List<ModelLoaded> loads = loads(new FleetSimulator(3, 2, List.of("r1", "r2"), List.of(ModelCatalog.QWEN_2_5_0_5B_Q8_0), List.of(), start));

        assertThat(loads).filteredOn(l -> l.getRelease().equals("r1")).allSatisfy(l ->
                assertThat(l.getOccurredAt()).isBetween(start, start.plusSeconds(3600)));
        assertThat(loads).filteredOn(l -> l.getRelease().equals("r2")).allSatisfy(l ->
                assertThat(l.getOccurredAt()).isBetween(start.plusSeconds(86_400), start.plusSeconds(86_400 + 3600)));
    }

    private static int indexOfFirst(List<ModelLoaded> loads, String release) {
        for (int i = 0; i < loads.size(); i++) {
            if (loads.get(i).getRelease().equals(release)) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void everyDeploymentLoadsEveryModelOnEveryRelease() {
        FleetSimulator fleet = new FleetSimulator(1, 5, List.of("r1", "r2", "r3"), List.of(ModelCatalog.LLAMA_3_2_1B_Q4_K_M,
                ModelCatalog.SMOLLM_360M_F16), List.of(), START);
        List<ModelLoaded> loads = loads(fleet);

        assertThat(loads).hasSize(fleet.loadCount()).hasSize(30);
        assertThat(loads.stream().mapToLong(l -> l.getTensors().size()).sum()).isEqualTo(fleet.tensorCount());
        assertThat(loads.stream().map(l -> l.getDeployment().getId()).distinct()).hasSize(5);
        assertThat(loads.stream().map(ModelLoaded::getRelease).distinct()).containsExactly("r1", "r2", "r3");
        assertThat(loads).extracting(ModelLoaded::getLoadId).doesNotHaveDuplicates();
        assertThat(loads).allSatisfy(l -> l.getTensors().forEach(t ->
                assertThat(TensorEncodings.parse(t.getEncoding(), t.getStoredBytes())).isNotNull()));
    }

    @Test
    void dequantizeDriftReEncodesMatchingTensorsFromItsReleaseOn() {
        Drift drift = Drift.parse("r2:dequantize=*ffn_down*", RELEASES);
        List<ModelLoaded> loads = loads(new FleetSimulator(1, 1, RELEASES, List.of(ModelCatalog.LLAMA_3_2_1B_Q4_K_M), List.of(drift), START));

        assertThat(form(loads.get(0), "blk.3.ffn_down.weight")).isEqualTo(EncodingRequestKind.KEEP);
        assertThat(form(loads.get(1), "blk.3.ffn_down.weight")).isEqualTo(EncodingRequestKind.DEQUANTIZE_TO);
        assertThat(form(loads.get(1), "blk.3.ffn_up.weight")).isEqualTo(EncodingRequestKind.KEEP);
    }

    @Test
    void unservableAndThresholdDriftChangeThePlatformAndProfile() {
        List<Drift> drift = List.of(Drift.parse("r2:unservable=Q6_K", RELEASES), Drift.parse("r2:threshold=1048576", RELEASES));
        List<ModelLoaded> loads = loads(new FleetSimulator(1, 1, RELEASES, List.of(ModelCatalog.LLAMA_3_2_1B_Q4_K_M), drift, START));

        assertThat(loads.get(0).getPlatform().getMappedServableEncodings()).contains("Q6_K");
        assertThat(loads.get(1).getPlatform().getMappedServableEncodings()).doesNotContain("Q6_K").contains("Q4_K");
        assertThat(loads.get(0).getProfile().getOffHeapThresholdBytes()).isEqualTo(262_144);
        assertThat(loads.get(1).getProfile().getOffHeapThresholdBytes()).isEqualTo(1_048_576);
    }

    @Test
    void anObservingRuntimeReportsItsPlanUntilALeakAndADivergingRuntimeArrive() {
        List<String> releases = List.of("r1", "r2");
        List<Drift> drift = List.of(Drift.parse("r2:leak=512MB", releases), Drift.parse("r2:diverge=*attn_q*", releases));
        ObservedRuntime runtime = new ObservedRuntime(drift, releases);
        dev.placementaudit.resolution.LoadResolution resolution = new dev.placementaudit.resolution.LoadResolution("test");
        dev.placementaudit.resolution.LoadValidator validator = new dev.placementaudit.resolution.LoadValidator(100_000);
        for (ModelLoaded load : new FleetSimulator(3, 4, releases, List.of(ModelCatalog.byId("qwen2.5-0.5b-q8_0")), drift, Instant.EPOCH)) {
            ObservedRuntime.Report report = runtime.report(load);
            dev.placementaudit.events.LoadResolved planned = resolution.resolve(validator.validate(report.load()),
                    new dev.placementaudit.resolution.Provenance("t", 0, 0), Instant.EPOCH).summary();
            dev.placementaudit.events.LoadObserved seen = report.observation();
            assertThat(seen.getLoadId()).isEqualTo(load.getLoadId());
            assertThat(seen.getDeploymentId()).isEqualTo(load.getDeployment().getId());
            assertThat(seen.getTensors()).as("the placement per tensor travels in the load").isEmpty();
            long observedOffHeap = seen.getDirectAfterBytes() - seen.getDirectBeforeBytes();
            long runtimeOffHeap = report.load().getTensors().stream().filter(t -> t.getRuntime().getDomain().name().equals("HOST_OFFHEAP"))
                    .mapToLong(t -> t.getRuntime().getResidentBytes()).sum();
            if (load.getRelease().equals("r1")) {
                assertThat(planned.getDivergedTensors()).isZero();
                assertThat(observedOffHeap).isEqualTo(planned.getOffHeapBytes());
                assertThat(seen.getMappedAfterBytes() - seen.getMappedBeforeBytes()).isEqualTo(planned.getMappedBytes());
            } else {
                assertThat(planned.getDivergedTensors()).as("every attn_q tensor, %s", load.getDeployment().getId())
                        .isEqualTo((int) load.getTensors().stream().filter(t -> t.getName().contains("attn_q")).count()).isPositive();
                assertThat(planned.getDivergences()).allSatisfy(d -> assertThat(d.getTensorName()).contains("attn_q"));
                assertThat(observedOffHeap).isEqualTo(runtimeOffHeap + (512L << 20));
            }
        }
    }

    @Test
    void leakAndDivergeSpecsAreCheckedToo() {
        assertThat(((Drift.Leak) Drift.parse("r1:leak=2GB", List.of("r1"))).bytes()).isEqualTo(2L << 30);
        assertThat(((Drift.Leak) Drift.parse("r1:leak=1048576", List.of("r1"))).bytes()).isEqualTo(1L << 20);
        assertThatThrownBy(() -> Drift.parse("r1:leak=lots", List.of("r1"))).hasMessageContaining("needs a size such as 512MB");
        assertThat(Drift.parse("r1:diverge=*attn*", List.of("r1")).observed()).isTrue();
        assertThat(Drift.parse("r1:threshold=1", List.of("r1")).observed()).isFalse();
    }

    @Test
    void driftSpecsAreCheckedAgainstTheReleases() {
        assertThatThrownBy(() -> Drift.parse("r9:dequantize=*", RELEASES)).hasMessageContaining("'r9'");
        assertThatThrownBy(() -> Drift.parse("r2:explode=1", RELEASES)).hasMessageContaining("'explode'");
        assertThatThrownBy(() -> Drift.parse("nonsense", RELEASES)).hasMessageContaining("must look like");
    }

    private static EncodingRequestKind form(ModelLoaded load, String tensor) {
        return load.getTensors().stream().filter(t -> t.getName().equals(tensor)).map(TensorInfo::getForm).findFirst().orElseThrow().getEncoding();
    }

    private static List<ModelLoaded> loads(FleetSimulator fleet) {
        return new ArrayList<>(StreamSupport.stream(fleet.spliterator(), false).toList());
    }
}
