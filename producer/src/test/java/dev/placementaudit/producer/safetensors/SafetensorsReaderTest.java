package dev.placementaudit.producer.safetensors;

import dev.placementaudit.core.format.DType;
import dev.placementaudit.core.format.Format;
import dev.placementaudit.core.format.Opaque;
import dev.placementaudit.events.FileFormat;
import dev.placementaudit.producer.model.ModelFileException;
import dev.placementaudit.producer.model.ModelFiles;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.model.StoredTensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SafetensorsReaderTest {
    @TempDir
    Path dir;

    private static final String VALID = """
            {"__metadata__": {"format": "pt", "name": "tiny-bert"},
             "embeddings.weight": {"dtype": "BF16", "shape": [8, 4], "data_offsets": [0, 64]},
             "encoder.dense.weight": {"dtype": "F32", "shape": [4, 4], "data_offsets": [64, 128]},
             "position_ids": {"dtype": "I64", "shape": [1, 4], "data_offsets": [128, 160]},
             "scale": {"dtype": "F32", "shape": [], "data_offsets": [160, 164]},
             "empty": {"dtype": "F16", "shape": [0, 4], "data_offsets": [164, 164]},
             "fp8.weight": {"dtype": "F8_E4M3", "shape": [4, 4], "data_offsets": [164, 180]}}""";

    @Test
    void readsDtypesShapesAndAbsoluteOffsets() throws IOException {
        Path file = write(VALID, 180);

        StoredModel model = SafetensorsReader.read(file);

        assertThat(model.fileFormat()).isEqualTo(FileFormat.SAFETENSORS);
        assertThat(model.name()).isEqualTo("tiny-bert");
        assertThat(model.metadata()).containsEntry("format", "pt");
        assertThat(model.tensors()).extracting(StoredTensor::name)
                .containsExactly("embeddings.weight", "encoder.dense.weight", "position_ids", "scale", "empty", "fp8.weight");
        StoredTensor embeddings = model.tensors().get(0);
        assertThat(embeddings.format()).isEqualTo(Format.dense(DType.BF16));
        assertThat(embeddings.shape()).containsExactly(8L, 4L);
        assertThat(embeddings.elementCount()).isEqualTo(32);
        assertThat(embeddings.storedBytes()).isEqualTo(64);
        long headerLength = VALID.getBytes(StandardCharsets.UTF_8).length;
        assertThat(model.tensors().get(1).fileOffset()).hasValue(8 + headerLength + 64);
        assertThat(model.tensors().get(2).format()).isEqualTo(Format.dense(DType.INT64));
        assertThat(model.tensors().get(3).elementCount()).as("a scalar holds one element").isEqualTo(1);
        assertThat(model.tensors().get(4).storedBytes()).isZero();
        assertThat(model.tensors().get(5).format()).isEqualTo(new Format(DType.UINT8, new Opaque("F8_E4M3", 16)));
    }

    @Test
    void modelFilesTellsSafetensorsFromGgufByContent() throws IOException {
        Path file = write(VALID, 180);
        Path renamed = Files.move(file, dir.resolve("weights.gguf"));

        assertThat(ModelFiles.read(renamed).fileFormat()).isEqualTo(FileFormat.SAFETENSORS);
    }

    @Test
    void refusesAHeaderLengthBeyondTheLimit() throws IOException {
        Path file = dir.resolve("huge.safetensors");
        Files.write(file, ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(200_000_000L).array());

        assertRefused(file, 0, "header length 200000000");
    }

    @Test
    void refusesAHeaderThatRunsPastTheFile() throws IOException {
        Path file = dir.resolve("short.safetensors");
        Files.write(file, ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(1000).array());

        assertRefused(file, 8, "runs past the end of the file");
    }

    @Test
    void refusesATruncatedDataBuffer() throws IOException {
        ModelFileException e = assertRefused(write(VALID, 170), -1, "the file is truncated");

        assertThat(e).hasMessageContaining("ends at byte");
    }

    @Test
    void refusesTrailingBytes() throws IOException {
        assertRefused(write(VALID, 200), -1, "trailing bytes");
    }

    @Test
    void refusesAHoleBetweenTensors() throws IOException {
        assertRefused(write("""
                {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                 "b": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}}""", 24), -1, "'b' begins at 16 and leaves a hole");
    }

    @Test
    void refusesOverlappingTensors() throws IOException {
        assertRefused(write("""
                {"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                 "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}""", 16), -1, "overlaps the previous tensor");
    }

    @Test
    void refusesASizeThatContradictsDtypeAndShape() throws IOException {
        assertRefused(write("""
                {"a": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 32]}}""", 32), 9, "holds 32 bytes but F32 x [4, 4] needs 64");
    }

    @Test
    void readsTheNewerDtypesSubByteOnesIncludedAsOpaque() throws IOException {
        Path file = write("""
                {"f4": {"dtype": "F4", "shape": [2, 4], "data_offsets": [0, 4]},
                 "f6": {"dtype": "F6_E2M3", "shape": [4], "data_offsets": [4, 7]},
                 "f6b": {"dtype": "F6_E3M2", "shape": [4], "data_offsets": [7, 10]},
                 "e8m0": {"dtype": "F8_E8M0", "shape": [3], "data_offsets": [10, 13]},
                 "fnuz": {"dtype": "F8_E4M3FNUZ", "shape": [1], "data_offsets": [13, 14]},
                 "fnuz2": {"dtype": "F8_E5M2FNUZ", "shape": [1], "data_offsets": [14, 15]},
                 "c64": {"dtype": "C64", "shape": [2], "data_offsets": [15, 31]}}""", 31);

        StoredModel model = SafetensorsReader.read(file);

        assertThat(model.tensors()).extracting(StoredTensor::storedBytes).containsExactly(4L, 3L, 3L, 3L, 1L, 1L, 16L);
        assertThat(model.tensors().get(0).format()).isEqualTo(new Format(DType.UINT8, new Opaque("F4", 4)));
        assertThat(model.tensors().get(6).format()).isEqualTo(new Format(DType.UINT8, new Opaque("C64", 16)));
    }

    @Test
    void refusesSubByteTensorsThatAreNotWholeBytesAndUnknownDtypesAtTheirEntry() throws IOException {
        String odd = """
                {"f4": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}""";
        assertRefused(write(odd, 2), 8 + odd.indexOf("\"f4\""), "3 elements of 4-bit F4: not a whole number of bytes");
        String unknown = """
                {"ok": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
                 "b": {"dtype": "F3", "shape": [2], "data_offsets": [1, 2]}}""";
        assertRefused(write(unknown, 2), 8 + unknown.indexOf("\"b\""), "unknown dtype 'F3'");
    }

    @Test
    void anEntrysErrorNamesWhereTheEntryStands() throws IOException {
        String header = """
                {"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
                 "b": {"dtype": "U8", "shape": [1], "data_offsets": [1, 9]}}""";

        assertRefused(write(header, 9), 8 + header.indexOf("\"b\""), "tensor 'b' holds 8 bytes but U8 x [1] needs 1");
    }

    @Test
    void refusesABomAndContentAfterTheJsonButTakesPaddingSpaces() throws IOException {
        assertRefused(write("\uFEFF" + VALID, 180), 8, "byte-order mark");
        assertRefused(write(VALID + " x", 180), -1, "content after its JSON object");
        assertRefused(write(VALID + "{}", 180), 8 + VALID.getBytes(StandardCharsets.UTF_8).length, "content after its JSON object");

        assertThat(SafetensorsReader.read(write(VALID + "      ", 180)).tensors()).hasSize(6);
    }

    @Test
    void acceptsNullMetadataAndADuplicateKeyKeepingTheLast() throws IOException {
        StoredModel model = SafetensorsReader.read(write("""
                {"__metadata__": null,
                 "a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                 "a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}""", 1));

        assertThat(model.metadata()).isEmpty();
        assertThat(model.tensors()).singleElement().satisfies(t -> assertThat(t.storedBytes()).isEqualTo(1));
    }


    @Test
    void refusesInvalidJsonNamingWhereItBroke() throws IOException {
        ModelFileException e = assertRefused(write("{\"a\": {\"dtype\": \"U8\",, }}", 0), -1, "not valid JSON");

        assertThat(e.offset()).isGreaterThan(8);
    }

    private Path write(String header, long dataBytes) throws IOException {
        byte[] json = header.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(json.length).array());
        out.writeBytes(json);
        out.writeBytes(new byte[(int) dataBytes]);
        Path file = dir.resolve("m-" + System.nanoTime() + ".safetensors");
        Files.write(file, out.toByteArray());
        return file;
    }

    private ModelFileException assertRefused(Path file, long offset, String message) {
        try {
            SafetensorsReader.read(file);
        } catch (ModelFileException e) {
            assertThat(e).hasMessageContaining(message).hasMessageContaining(file.toString());
            if (offset >= 0) {
                assertThat(e.offset()).isEqualTo(offset);
            }
            return e;
        }
        throw new AssertionError("expected " + file + " to be refused with '" + message + "'");
    }

    @Test
    void aMissingFileIsAClearError() {
        assertThatThrownBy(() -> ModelFiles.read(dir.resolve("nope.gguf"))).isInstanceOf(ModelFileException.class).hasMessageContaining("no such file");
    }
}
