package dev.placementaudit.producer.sample;

import dev.placementaudit.core.format.DType;
import dev.placementaudit.core.format.Format;
import dev.placementaudit.events.FileFormat;
import dev.placementaudit.producer.model.ModelFiles;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.model.StoredTensor;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.producer.simulate.ModelCatalog.Archetype;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** A sample model file, read back by the same readers a real file goes through, is the catalog's layout. */
class SampleModelFileTest {
    @TempDir
    Path dir;

    static List<Archetype> catalog() {
        return ModelCatalog.ALL;
    }

    @ParameterizedTest
    @MethodSource("catalog")
    void aGgufSampleReadsBackAsTheCatalogsLayout(Archetype archetype) {
        Path file = dir.resolve(archetype.id() + ".gguf");

        long size = SampleModelFile.write(archetype, SampleModelFile.Format.GGUF, file);
        StoredModel read = ModelFiles.read(file);
        StoredModel expected = archetype.model();

        assertThat(read.fileFormat()).isEqualTo(FileFormat.GGUF);
        assertThat(read.name()).isEqualTo(archetype.displayName());
        assertThat(read.sizeBytes()).isEqualTo(size);
        assertThat(read.tensors()).hasSameSizeAs(expected.tensors());
        long dataStart = read.tensors().get(0).fileOffset().orElseThrow();
        for (int i = 0; i < expected.tensors().size(); i++) {
            StoredTensor want = expected.tensors().get(i);
            StoredTensor got = read.tensors().get(i);
            assertThat(got.name()).isEqualTo(want.name());
            assertThat(got.format()).isEqualTo(want.format());
            assertThat(got.shape()).isEqualTo(want.shape());
            assertThat(got.storedBytes()).isEqualTo(want.storedBytes());
            assertThat(got.fileOffset().orElseThrow() - dataStart).isEqualTo(want.fileOffset().orElseThrow());
        }
    }

    @ParameterizedTest
    @MethodSource("catalog")
    void aSafetensorsSampleIsTheBf16CheckpointWithHuggingFaceNamesAndShapes(Archetype archetype) throws Exception {
        Path file = dir.resolve(archetype.id() + ".safetensors");

        SampleModelFile.write(archetype, SampleModelFile.Format.SAFETENSORS, file);
        StoredModel read = ModelFiles.read(file);

        assertThat(read.fileFormat()).isEqualTo(FileFormat.SAFETENSORS);
        assertThat(read.sizeBytes()).isEqualTo(Files.size(file));
        List<ModelCatalog.LayoutTensor> layout = archetype.layout();
        assertThat(read.tensors()).hasSameSizeAs(layout);
        for (int i = 0; i < layout.size(); i++) {
            ModelCatalog.LayoutTensor want = layout.get(i);
            StoredTensor got = read.tensors().stream().filter(t -> t.name().equals(SampleModelFile.huggingFaceName(want.name()))).findFirst()
                    .orElseThrow(() -> new AssertionError("no " + SampleModelFile.huggingFaceName(want.name())));
            List<Long> reversed = new ArrayList<>(want.shape());
            java.util.Collections.reverse(reversed);
            assertThat(got.shape()).isEqualTo(reversed);
            assertThat(got.storedBytes()).isEqualTo(want.elementCount() * 2);
            assertThat(got.format()).isEqualTo(Format.dense(DType.BF16));
        }
        assertThat(read.tensors()).extracting(StoredTensor::name).contains("model.embed_tokens.weight", "model.layers.0.mlp.down_proj.weight",
                "model.layers.0.self_attn.q_proj.weight", "model.norm.weight");
    }
}
