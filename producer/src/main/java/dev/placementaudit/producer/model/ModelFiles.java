package dev.placementaudit.producer.model;

import dev.placementaudit.producer.gguf.GgufReader;
import dev.placementaudit.producer.safetensors.SafetensorsReader;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;

/**
 * Opens a model by what its file is (GGUF magic, else safetensors), not by what it is called; a shard of a sharded model
 * (a GGUF split, or a safetensors index) opens the whole model.
 */
public final class ModelFiles {
    private ModelFiles() {
    }

    public static StoredModel read(Path file) {
        if (Files.isDirectory(file)) {
            throw new IllegalArgumentException(file + " is a directory, not a model file: pass the .gguf or .safetensors file itself");
        }
        if (!Files.isRegularFile(file)) {
            throw new ModelFileException(file, 0, "no such file");
        }
        if (ShardedModels.isSafetensorsIndex(file)) {
            return ShardedModels.safetensorsIndex(file, ModelFiles::readOne);
        }
        Matcher split = ShardedModels.GGUF_SPLIT.matcher(file.getFileName().toString());
        if (split.matches()) {
            return ShardedModels.ggufSplits(file, split, ModelFiles::readOne);
        }
        return readOne(file);
    }

    /** One file, by what it is: GGUF magic, else safetensors. */
    private static StoredModel readOne(Path file) {
        byte[] head;
        try (InputStream in = Files.newInputStream(file)) {
            head = in.readNBytes(4);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
        if (head.length == 4 && head[0] == 'G' && head[1] == 'G' && head[2] == 'U' && head[3] == 'F') {
            return GgufReader.read(file).toStoredModel();
        }
        return SafetensorsReader.read(file);
    }
}
