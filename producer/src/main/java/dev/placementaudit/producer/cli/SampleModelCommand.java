package dev.placementaudit.producer.cli;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.core.format.GgmlType;
import dev.placementaudit.producer.sample.SampleModelFile;
import dev.placementaudit.producer.sample.TinyLlamaFile;
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

    @Option(names = "--type", defaultValue = "Q4_0", description = "with --layout tiny-llama: the weights' encoding, Q4_0, Q4_K, Q8_0 or F16 "
            + "(default: ${DEFAULT-VALUE})") String type;

    @Option(names = "--with-weights", description = "write real weights (seeded), a model a runtime can run: tiny-llama only") boolean withWeights;

    @Option(names = "--seed", defaultValue = "1", description = "with --with-weights: the weights' seed (default: ${DEFAULT-VALUE})") long seed;

    static final String TINY_LLAMA = "tiny-llama";

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    /** A llama llama.cpp loads and runs: 2 layers, 256 wide, its own 1,024-token SPM vocabulary, seeded weights. */
    private int tinyLlama() {
        GgmlType chosen = GgmlType.byName(type.toUpperCase(Locale.ROOT)).filter(TinyLlamaFile.TYPES::contains)
                .orElseThrow(() -> new CommandFailure("a tiny llama is written in Q4_0, Q4_K, Q8_0 or F16, not '" + type + "'"));
        if (out.getFileName().toString().endsWith(".safetensors") || format == SampleModelFile.Format.SAFETENSORS) {
            throw new CommandFailure(TINY_LLAMA + " is written as GGUF, the file llama.cpp loads");
        }
        long size = TinyLlamaFile.write(chosen, seed, out);
        spec.commandLine().getOut().printf(Locale.ROOT, "wrote %s: a tiny llama in %s with weights (seed %d), %d tensors, %s; "
                + "llama.cpp loads and runs it%n", out, chosen, seed, TinyLlamaFile.layout(chosen).size(), ByteSizes.format(size));
        return 0;
    }

    @Override
    public Integer call() throws IOException {
        if (Files.isDirectory(out)) {
            throw new CommandFailure(out + " is a directory; --out takes a file name such as model.gguf");
        }
        if (Files.exists(out) && !force) {
            throw new CommandFailure(out + " exists; pass --force to overwrite it");
        }
        if (layout.equals(TINY_LLAMA)) {
            return tinyLlama();
        }
        if (withWeights) {
            throw new CommandFailure("--with-weights writes " + TINY_LLAMA + " only; " + layout + " is written as a layout with no weights");
        }
        ModelCatalog.Archetype model = ModelCatalog.byId(layout);
        SampleModelFile.Format chosen = format != null ? format
                : out.getFileName().toString().endsWith(".safetensors") ? SampleModelFile.Format.SAFETENSORS : SampleModelFile.Format.GGUF;
        long size = SampleModelFile.write(model, chosen, out);
        spec.commandLine().getOut().printf(Locale.ROOT, "wrote %s: %s layout of %s, %d tensors, %s (tensor data is a sparse hole of zeros)%n",
                out, chosen, model.displayName(), model.layout().size(), ByteSizes.format(size));
        return 0;
    }
}

/** The catalog's model ids and the tiny llama, for {@code --layout}'s help and completion. */
final class LayoutIds implements Iterable<String> {
    @Override
    public Iterator<String> iterator() {
        return java.util.stream.Stream.concat(ModelCatalog.ALL.stream().map(ModelCatalog.Archetype::id),
                java.util.stream.Stream.of(SampleModelCommand.TINY_LLAMA)).iterator();
    }
}
