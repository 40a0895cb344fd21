package dev.placementaudit.producer.model;

import dev.placementaudit.events.FileFormat;
import dev.placementaudit.producer.gguf.GgufTestFile;
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

/** A model in several files is read as one model from any of them, every shard checked. */
class ShardedModelsTest {
    @TempDir
    Path dir;

    private static byte[] u16(int v) {
        return new byte[]{(byte) v, (byte) (v >> 8)};
    }

    private static byte[] i32(int v) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array();
    }

    /** Two GGUF splits as gguf-split writes them: split.* metadata, general.* on the first only. */
    private void ggufSplits() throws IOException {
        new GgufTestFile().string("general.name", "Split Llama").rawKv("split.no", 2, u16(0)).rawKv("split.count", 2, u16(2))
                .rawKv("split.tensors.count", 5, i32(3)).tensor("token_embd.weight", 0, 1024, 256).tensor("blk.0.attn_q.weight", 0, 512, 128)
                .writeTo(dir.resolve("llama-00001-of-00002.gguf"));
        new GgufTestFile().rawKv("split.no", 2, u16(1)).rawKv("split.count", 2, u16(2)).rawKv("split.tensors.count", 5, i32(3))
                .tensor("output_norm.weight", 0, 64, 16).writeTo(dir.resolve("llama-00002-of-00002.gguf"));
    }

    @Test
    void anyGgufSplitOpensTheWholeModel() throws IOException {
        ggufSplits();

        for (String shard : new String[]{"llama-00001-of-00002.gguf", "llama-00002-of-00002.gguf"}) {
            StoredModel model = ModelFiles.read(dir.resolve(shard));

            assertThat(model.name()).isEqualTo("Split Llama");
            assertThat(model.fileFormat()).isEqualTo(FileFormat.GGUF);
            assertThat(model.tensors()).extracting(StoredTensor::name).containsExactly("token_embd.weight", "blk.0.attn_q.weight", "output_norm.weight");
            assertThat(model.sizeBytes()).isEqualTo(Files.size(dir.resolve("llama-00001-of-00002.gguf")) + Files.size(dir.resolve("llama-00002-of-00002.gguf")));
        }
    }

    @Test
    void aMissingGgufSplitIsNamed() throws IOException {
        ggufSplits();
        Files.delete(dir.resolve("llama-00002-of-00002.gguf"));

        assertThatThrownBy(() -> ModelFiles.read(dir.resolve("llama-00001-of-00002.gguf"))).isInstanceOf(ModelFileException.class)
                .hasMessageContaining("llama-00002-of-00002.gguf").hasMessageContaining("split 2 of 2").hasMessageContaining("missing");
    }

    @Test
    void aSplitCountThatDisagreesWithTheTensorsIsRefused() throws IOException {
        new GgufTestFile().rawKv("split.count", 2, u16(1)).rawKv("split.tensors.count", 5, i32(5)).tensor("w", 0, 64, 16)
                .writeTo(dir.resolve("m-00001-of-00001.gguf"));

        assertThatThrownBy(() -> ModelFiles.read(dir.resolve("m-00001-of-00001.gguf"))).isInstanceOf(ModelFileException.class)
                .hasMessageContaining("split.tensors.count says 5 tensors but the 1 splits hold 1");
    }

    private Path safetensors(String name, String header, int dataBytes) throws IOException {
        byte[] json = header.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(json.length).array());
        out.writeBytes(json);
        out.writeBytes(new byte[dataBytes]);
        return Files.write(dir.resolve(name), out.toByteArray());
    }

    private Path shardedSafetensors(String weightMapTail, long totalSize) throws IOException {
        safetensors("model-00001-of-00002.safetensors", """
                {"__metadata__": {"format": "pt"}, "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}""", 16);
        safetensors("model-00002-of-00002.safetensors", """
                {"b": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}""", 8);
        return Files.writeString(dir.resolve("model.safetensors.index.json"), """
                {"metadata": {"total_size": %d}, "weight_map": {"a": "model-00001-of-00002.safetensors", %s}}""".formatted(totalSize, weightMapTail));
    }

    @Test
    void aSafetensorsIndexOpensEveryShardItNames() throws IOException {
        Path index = shardedSafetensors("\"b\": \"model-00002-of-00002.safetensors\"", 24);

        StoredModel model = ModelFiles.read(index);

        assertThat(model.fileFormat()).isEqualTo(FileFormat.SAFETENSORS);
        assertThat(model.tensors()).extracting(StoredTensor::name).containsExactly("a", "b");
        assertThat(model.tensorBytes()).isEqualTo(24);
    }

    @Test
    void aShardHoldingATensorTheIndexPlacesElsewhereIsRefused() throws IOException {
        Path index = shardedSafetensors("\"b\": \"model-00001-of-00002.safetensors\", \"c\": \"model-00002-of-00002.safetensors\"", 24);

        assertThatThrownBy(() -> ModelFiles.read(index)).isInstanceOf(ModelFileException.class)
                .hasMessageContaining("holds tensor 'b', which model.safetensors.index.json places in model-00001-of-00002.safetensors");
    }

    @Test
    void aTotalSizeTheShardsDoNotHoldIsRefused() throws IOException {
        Path index = shardedSafetensors("\"b\": \"model-00002-of-00002.safetensors\"", 4096);

        assertThatThrownBy(() -> ModelFiles.read(index)).isInstanceOf(ModelFileException.class)
                .hasMessageContaining("says total_size 4096 but its shards' tensors hold 24 bytes");
    }

    @Test
    void aShardPathOutsideTheIndexFolderIsRefused() throws IOException {
        Path index = Files.writeString(dir.resolve("evil.safetensors.index.json"), """
                {"weight_map": {"a": "../../etc/passwd"}}""");

        assertThatThrownBy(() -> ModelFiles.read(index)).isInstanceOf(ModelFileException.class).hasMessageContaining("not a file beside it");
    }
}
