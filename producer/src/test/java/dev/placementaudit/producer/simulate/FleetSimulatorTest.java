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
