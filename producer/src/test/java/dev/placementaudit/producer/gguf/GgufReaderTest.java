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
        assertThat(file.toStoredModel().tensors()).extracting(StoredTensor::sizeEstimated).containsExactly(true, false);
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
    void refusesABlockQuantizedTensorWhoseRowsAreNotWholeBlocks() throws IOException {
        // 128 x 256 Q4_K: 32,768 elements, a whole number of 256-element blocks in all, but each 128-element row is half a block.
        assertRefused(new GgufTestFile().tensor("q", 12, GgmlType.Q4_K.bytesFor(128L * 256), 128, 256), -1,
                "has rows of 128 elements, not a multiple of Q4_K's block of 256");
    }

    @Test
    void refusesMoreTensorsThanItsDocumentedLimitBeforeReadingThem() throws IOException {
        ModelFileException e = assertRefused(sample().claimTensorCount(1_000_001), 8, "tensor count 1000001 is implausible");

        assertThat(e).hasMessageContaining("limit " + GgufReader.MAX_TENSORS);
    }

    @Test
    void typeThirtySixIsReadAsI2SWithAWarning() throws IOException {
        GgufFile file = GgufReader.read(new GgufTestFile().tensor("w", 36, 64, 256).writeTo(dir.resolve("i2s.gguf")));

        assertThat(file.warnings()).singleElement().asString().contains("ggml type 36, read as bitnet.cpp's I2_S");
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

    /**
     * The vocab-only files llama.cpp's converter writes (shared/testdata, MIT): no tensors, and the file ends right after
     * the header, before the aligned start of a data section it does not need. Every reference reader reads them.
     */
    @Test
    void readsLlamaCppsVocabOnlyFilesThatEndBeforeTheirDataSection() throws IOException {
        Path vocab = Path.of("..", "..", "shared", "testdata", "llama.cpp-vocab");
        assertThat(vocab).as("shared/testdata beside the project (CI has it there too)").isDirectory();
        List<Path> files;
        try (var listing = java.nio.file.Files.list(vocab)) {
            files = listing.filter(f -> f.getFileName().toString().endsWith(".gguf")).sorted().toList();
        }
        assertThat(files).hasSizeGreaterThanOrEqualTo(4);
        for (Path path : files) {
            GgufFile file = GgufReader.read(path);

            assertThat(file.tensors()).as(path.toString()).isEmpty();
            assertThat(file.dataStart()).as("%s: the data section would start past the end", path).isGreaterThanOrEqualTo(file.fileSize());
            assertThat(file.metadata()).as(path.toString()).containsKey("tokenizer.ggml.model").containsKey("general.architecture");
            assertThat(file.metadata().get("tokenizer.ggml.tokens")).as(path.toString()).startsWith("[STRING x ");
        }
    }

    @Test
    void aFileWithTensorsMustStillReachItsDataSection() throws IOException {
        assertRefused(new GgufTestFile().tensor("w", 0, 1024, 256).truncateBy(1030), -1, "file ends before its data section");
    }

    @Test
    void acceptsEveryPowerOfTwoAsAlignmentAndRefusesTheRest() throws IOException {
        for (long alignment : new long[]{1, 2, 4, 8, 64, 4096}) {
            GgufFile file = GgufReader.read(new GgufTestFile().alignment(alignment).tensor("w", 0, 1024, 256).tensor("v", 0, 12, 3)
                    .writeTo(dir.resolve("a" + alignment + ".gguf")));
            assertThat(file.alignment()).isEqualTo(alignment);
            assertThat(file.tensors()).hasSize(2);
        }
        assertRefused(new GgufTestFile().alignment(24).tensor("w", 0, 1024, 256), -1, "general.alignment 24 is not a power of two");
        assertRefused(new GgufTestFile().alignment(48).tensor("w", 0, 1024, 256), -1, "general.alignment 48 is not a power of two");
        assertRefused(new GgufTestFile().rawKv("general.alignment", 4, GgufTestFile.le32(0)).tensor("w", 0, 1024, 256), -1,
                "general.alignment 0 is not a power of two");
    }

    @Test
    void refusesAnAlignmentStoredAsAnotherType() throws IOException {
        // UINT64 (type 10) 32: ggml refuses the file rather than guess.
        assertRefused(new GgufTestFile().rawKv("general.alignment", 10, GgufTestFile.le64(32)).tensor("w", 0, 1024, 256), -1,
                "general.alignment is of type UINT64, not UINT32");
    }

    @Test
    void aZeroDimensionalTensorIsOneElement() throws IOException {
        GgufFile file = GgufReader.read(new GgufTestFile().tensor("scale", 0, 4).tensor("w", 0, 1024, 256).writeTo(dir.resolve("scalar.gguf")));

        GgufTensor scalar = file.tensors().get(0);
        assertThat(scalar.dims()).isEmpty();
        assertThat(scalar.elementCount()).isEqualTo(1);
        assertThat(scalar.bytes()).isEqualTo(4);
    }

    @Test
    void anOffsetBeyondTheFileIsSaidToBeBeyondTheFile() throws IOException {
        // 2^64 - 32 is a multiple of 32: the problem is where it points, not its alignment.
        assertRefused(new GgufTestFile().tensor("w", 0, 1024, 256).tensorAt("far", 0, -32L, 4, 1), -1,
                "tensor 'far' data offset 18446744073709551584 lies past the end of the file");
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
