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
                {"a": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 32]}}""", 32), 8, "holds 32 bytes but F32 x [4, 4] needs 64");
    }

    @Test
    void refusesAnUnknownDtype() throws IOException {
        assertRefused(write("""
                {"a": {"dtype": "F4", "shape": [2], "data_offsets": [0, 1]}}""", 1), 8, "unknown dtype 'F4'");
    }

    @Test
    void refusesDuplicateTensorNames() throws IOException {
        assertRefused(write("""
                {"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
                 "a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}""", 2), -1, "not valid JSON");
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
