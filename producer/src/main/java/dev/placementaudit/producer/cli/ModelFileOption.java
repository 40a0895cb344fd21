package dev.placementaudit.producer.cli;

import dev.placementaudit.producer.model.ModelFiles;
import dev.placementaudit.producer.model.StoredModel;
import picocli.CommandLine.Option;

import java.nio.file.Path;

/** {@code --model FILE}: the GGUF or safetensors file a command reads the header of. */
final class ModelFileOption {
    @Option(names = "--model", required = true, paramLabel = "FILE", description = "the model file (GGUF or safetensors)") Path file;

    /** The file's header: its tensors, their formats and sizes (the tensor data is not read). */
    StoredModel read() {
        return ModelFiles.read(file);
    }
}
