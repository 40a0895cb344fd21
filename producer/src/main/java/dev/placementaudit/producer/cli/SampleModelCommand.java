package dev.placementaudit.producer.cli;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.producer.sample.SampleModelFile;
import dev.placementaudit.producer.simulate.ModelCatalog;
import dev.placementaudit.service.cli.CommandFailure;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Locale;
import java.util.concurrent.Callable;

@Command(name = "sample-model", mixinStandardHelpOptions = true,
        description = "Write a model file with a real model's tensor layout and no weights (sparse: a few KB on disk), "
                + "to try explain and publish without downloading a model.")
final class SampleModelCommand implements Callable<Integer> {
    @Option(names = "--layout", required = true, completionCandidates = LayoutIds.class,
            description = "the model whose layout to write: ${COMPLETION-CANDIDATES}") String layout;

    @Option(names = "--out", required = true, paramLabel = "FILE", description = "where to write it; a name ending in .safetensors "
            + "gets the safetensors layout unless --format says otherwise") Path out;

    @Option(names = "--format", description = "GGUF (quantized, as llama.cpp writes it) or SAFETENSORS (the BF16 checkpoint, "
            + "as Hugging Face writes it) (default: from the file name, else GGUF)") SampleModelFile.Format format;

    @Option(names = "--force", description = "overwrite FILE if it exists") boolean force;

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        ModelCatalog.Archetype model = ModelCatalog.byId(layout);
        if (Files.isDirectory(out)) {
            throw new CommandFailure(out + " is a directory; --out takes a file name such as model.gguf");
        }
        if (Files.exists(out) && !force) {
            throw new CommandFailure(out + " exists; pass --force to overwrite it");
        }
        SampleModelFile.Format chosen = format != null ? format
                : out.getFileName().toString().endsWith(".safetensors") ? SampleModelFile.Format.SAFETENSORS : SampleModelFile.Format.GGUF;
        long size = SampleModelFile.write(model, chosen, out);
        spec.commandLine().getOut().printf(Locale.ROOT, "wrote %s: %s layout of %s, %d tensors, %s (tensor data is a sparse hole of zeros)%n",
                out, chosen, model.displayName(), model.layout().size(), ByteSizes.format(size));
        return 0;
    }
}

/** The catalog's model ids, for {@code --layout}'s help and completion. */
final class LayoutIds implements Iterable<String> {
    @Override
    public Iterator<String> iterator() {
        return ModelCatalog.ALL.stream().map(ModelCatalog.Archetype::id).iterator();
    }
}
