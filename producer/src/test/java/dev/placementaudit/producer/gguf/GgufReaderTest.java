package dev.placementaudit.producer.gguf;

import dev.placementaudit.core.format.BlockQuant;
import dev.placementaudit.core.format.DType;
import dev.placementaudit.core.format.Format;
import dev.placementaudit.core.format.GgmlType;
import dev.placementaudit.core.format.Opaque;
import dev.placementaudit.producer.model.ModelFileException;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.model.StoredTensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class GgufReaderTest {
    @TempDir
    Path dir;

    /** A little Llama-shaped file: one tensor of each interesting kind. */
    private GgufTestFile sample() {
        return new GgufTestFile()
                .string("general.architecture", "llama")
                .string("general.name", "Tiny Llama")
                .u32("llama.block_count", 1)
                .stringArray("tokenizer.ggml.tokens", List.of("<s>", "</s>", "hello"))
                .tensor("token_embd.weight", 14, GgmlType.Q6_K.bytesFor(256L * 8), 256, 8)
                .tensor("blk.0.attn_norm.weight", 0, 256 * 4, 256)
                .tensor("blk.0.attn_q.weight", 12, GgmlType.Q4_K.bytesFor(256L * 256), 256, 256)
                .tensor("blk.0.ffn_down.weight", 11, GgmlType.Q3_K.bytesFor(256L * 512), 512, 256)
                .tensor("blk.0.ffn_up.weight", 8, GgmlType.Q8_0.bytesFor(256L * 512), 256, 512)
                .tensor("output.weight", 1, 256L * 8 * 2, 256, 8);
    }

    @Test
    void readsTensorsTypesSizesAndAbsoluteOffsets() throws IOException {
        GgufFile file = GgufReader.read(sample().writeTo(dir.resolve("tiny.gguf")));

        assertThat(file.version()).isEqualTo(3);
        assertThat(file.alignment()).isEqualTo(32);
        assertThat(file.dataStart() % 32).isZero();
        assertThat(file.tensors()).extracting(GgufTensor::name).containsExactly("token_embd.weight", "blk.0.attn_norm.weight",
                "blk.0.attn_q.weight", "blk.0.ffn_down.weight", "blk.0.ffn_up.weight", "output.weight");
        GgufTensor q = file.tensors().get(2);
        assertThat(q.type()).contains(GgmlType.Q4_K);
        assertThat(q.dims()).containsExactly(256L, 256L);
        assertThat(q.elementCount()).isEqualTo(65_536);
        assertThat(q.bytes()).isEqualTo(36_864);
        assertThat(q.absoluteOffset()).isEqualTo(file.dataStart() + q.relativeOffset());
        assertThat(file.tensors()).allSatisfy(t -> assertThat(t.relativeOffset() % 32).isZero());
    }

    @Test
    void keepsMetadataScalarsAndSummarisesArrays() throws IOException {
        GgufFile file = GgufReader.read(sample().writeTo(dir.resolve("tiny.gguf")));

        assertThat(file.metadata()).containsEntry("general.name", "Tiny Llama")
                .containsEntry("llama.block_count", "1")
                .containsEntry("tokenizer.ggml.tokens", "[STRING x 3]");
    }

    @Test
    void mapsGgmlTypesToSkainetFormats() throws IOException {
        StoredModel model = GgufReader.read(sample().writeTo(dir.resolve("tiny.gguf"))).toStoredModel();

        assertThat(model.name()).isEqualTo("Tiny Llama");
        assertThat(model.tensors()).extracting(StoredTensor::format).containsExactly(
                new Format(DType.FP32, BlockQuant.Q6_K),
                Format.dense(DType.FP32),
                new Format(DType.FP32, BlockQuant.Q4_K),
                new Format(DType.FP32, new Opaque("Q3_K", GgmlType.Q3_K.bytesFor(256L * 512))),
                new Format(DType.FP32, BlockQuant.Q8_0),
                Format.dense(DType.FP16));
        assertThat(model.tensors().get(2).fileOffset()).isPresent();
    }

    @Test
    void honoursACustomAlignment() throws IOException {
        GgufFile file = GgufReader.read(new GgufTestFile().alignment(64)
                .tensor("a", 0, 100 * 4, 100).tensor("b", 0, 16 * 4, 16).writeTo(dir.resolve("aligned.gguf")));

        assertThat(file.alignment()).isEqualTo(64);
        assertThat(file.tensors().get(1).relativeOffset()).isEqualTo(448);
        assertThat(file.dataStart() % 64).isZero();
    }

    @Test
    void readsVersionTwo() throws IOException {
        assertThat(GgufReader.read(sample().version(2).writeTo(dir.resolve("v2.gguf"))).version()).isEqualTo(2);
    }

    @Test
    void sizesAnUnknownTypeByTheGapToTheNextTensorAndSaysSo() throws IOException {
        GgufFile file = GgufReader.read(new GgufTestFile().tensor("future", 41, 96, 128).tensor("next", 0, 64, 16)
                .writeTo(dir.resolve("future.gguf")));

        GgufTensor future = file.tensors().get(0);
        assertThat(future.type()).isEmpty();
        assertThat(future.bytes()).isEqualTo(96);
        assertThat(file.warnings()).singleElement().asString().contains("unknown ggml type 41");
        assertThat(file.toStoredModel().tensors().get(0).format().encoding()).isEqualTo(new Opaque("GGML_TYPE_41", 96));
    }

    @Test
    void keepsDuplicateMetadataKeysUnderNewNames() throws IOException {
        GgufFile file = GgufReader.read(new GgufTestFile().string("general.name", "a").string("general.name", "b")
                .tensor("t", 0, 4, 1).writeTo(dir.resolve("dup.gguf")));

        assertThat(file.metadata()).containsEntry("general.name", "a").containsEntry("general.name_dup_1", "b");
    }

    @Test
    void refusesAFileThatIsNotGguf() throws IOException {
        assertRefused(sample().magic(0x12345678L), 0, "not a GGUF file");
    }

    @Test
    void refusesVersionOneAndFutureVersions() throws IOException {
        assertRefused(sample().version(1), 4, "version 1");
        assertRefused(sample().version(4), 4, "unsupported GGUF version 4");
    }

    @Test
    void refusesABigEndianFile() throws IOException {
        assertRefused(sample().version(3L << 24), 4, "big-endian");
    }

    @Test
    void refusesATruncatedFileNamingTheTensorThatRunsPastTheEnd() throws IOException {
        GgufTestFile truncated = sample().truncateBy(100);
        ModelFileException e = assertRefused(truncated, -1, "'output.weight'");

        assertThat(e).hasMessageContaining("extends past the end of the file").hasMessageContaining("truncated");
    }

    @Test
    void refusesAFileCutInsideItsHeader() throws IOException {
        Path file = sample().writeTo(dir.resolve("cut.gguf"));
        try (var raf = new java.io.RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(30);
        }

        assertThatThrownBy(() -> GgufReader.read(file)).isInstanceOf(ModelFileException.class).hasMessageContaining("truncated");
    }

    @Test
    void refusesAMisalignedOffset() throws IOException {
        assertRefused(new GgufTestFile().tensorAt("a", 0, 4, 16, 4), -1, "not a multiple of the alignment 32");
    }

    @Test
    void refusesOverlappingTensors() throws IOException {
        assertRefused(new GgufTestFile().tensorAt("a", 0, 0, 256, 64).tensorAt("b", 0, 128, 64, 16), -1, "overlaps 'a'");
    }

    @Test
    void refusesAPartialQuantizationBlock() throws IOException {
        assertRefused(new GgufTestFile().tensor("q", 12, 144, 200), -1, "not a multiple of Q4_K's block of 256");
    }

    @Test
    void refusesTooManyDimensions() throws IOException {
        assertRefused(new GgufTestFile().tensor("t", 0, 4, 1, 1, 1, 1, 1), -1, "5 dimensions");
    }

    @Test
    void refusesAnImplausibleTensorCount() throws IOException {
        assertRefused(sample().claimTensorCount(1L << 40), 8, "tensor count");
    }

    @Test
    void refusesAStringLengthThatWouldExhaustMemory() throws IOException {
        byte[] hugeLength = GgufTestFile.le64(1L << 40);
        assertRefused(new GgufTestFile().rawKv("k", 8, hugeLength).tensor("t", 0, 4, 1), -1, "exceeds");
    }

    private ModelFileException assertRefused(GgufTestFile spec, long offset, String message) throws IOException {
        Path file = spec.writeTo(dir.resolve("bad-" + System.nanoTime() + ".gguf"));
        try {
            GgufReader.read(file);
        } catch (ModelFileException e) {
            assertThat(e).hasMessageContaining(message).hasMessageContaining(file.toString());
            if (offset >= 0) {
                assertThat(e.offset()).isEqualTo(offset);
                assertThat(e).hasMessageContaining("at byte " + offset);
            }
            return e;
        }
        throw new AssertionError("expected " + file + " to be refused with '" + message + "'");
    }
}
