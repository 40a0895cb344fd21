package dev.placementaudit.producer.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.placementaudit.events.FileFormat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A model stored in several files, read as the one model it is, every shard checked: llama.cpp's GGUF splits
 * ({@code <name>-00001-of-00003.gguf}, as gguf-split writes them) and Hugging Face's sharded safetensors
 * ({@code model.safetensors.index.json} and the files its weight_map names). Any shard names the whole model.
 */
final class ShardedModels {
    static final Pattern GGUF_SPLIT = Pattern.compile("(.+)-(\\d{5})-of-(\\d{5})\\.gguf");
    /**
     * Made on first use: an ObjectMapper's first making loads Jackson's date format and with it the locale's calendar
     * data (about 30 ms), which {@code producer explain} of one GGUF file would pay at start for an index it never reads.
     */
    private static final class Json {
        static final ObjectMapper MAPPER = new ObjectMapper();
    }

    private ShardedModels() {
    }

    static boolean isSafetensorsIndex(Path file) {
        return file.getFileName().toString().endsWith(".safetensors.index.json");
    }

    /** Every split of the model {@code file} belongs to, in order, each read as GGUF; the first carries the metadata. */
    static StoredModel ggufSplits(Path file, Matcher split, Function<Path, StoredModel> read) {
        int count = Integer.parseInt(split.group(3));
        if (count < 1 || Integer.parseInt(split.group(2)) > count) {
            throw new ModelFileException(file, 0, "split " + split.group(2) + " of " + split.group(3) + " is not a split of a model");
        }
        List<StoredModel> shards = new ArrayList<>();
        for (int i = 1; i <= count; i++) {
            Path shard = file.resolveSibling(String.format("%s-%05d-of-%05d.gguf", split.group(1), i, count));
            if (!Files.isRegularFile(shard)) {
                throw new ModelFileException(shard, 0, "split " + i + " of " + count + " of " + file.getFileName() + " is missing");
            }
            StoredModel model = read.apply(shard);
            String declared = model.metadata().get("split.count");
            if (declared != null && !declared.equals(Integer.toString(count))) {
                throw new ModelFileException(shard, 0, "says split.count " + declared + " but its name says " + count);
            }
            shards.add(model);
        }
        StoredModel first = shards.get(0);
        String total = first.metadata().get("split.tensors.count");
        StoredModel whole = combine(first.name(), FileFormat.GGUF, first.metadata(), shards);
        if (total != null && !total.equals(Integer.toString(whole.tensors().size()))) {
            throw new ModelFileException(file, 0, "split.tensors.count says " + total + " tensors but the " + count + " splits hold "
                    + whole.tensors().size());
        }
        return whole;
    }

    /** The shards an index's weight_map names, each read as safetensors, and checked against the map and total_size. */
    static StoredModel safetensorsIndex(Path index, Function<Path, StoredModel> read) {
        JsonNode root;
        try {
            root = Json.MAPPER.readTree(index.toFile());
        } catch (IOException e) {
            throw new ModelFileException(index, 0, "is not a readable safetensors index: " + e.getMessage(), e);
        }
        JsonNode weightMap = root == null ? null : root.get("weight_map");
        if (weightMap == null || !weightMap.isObject() || weightMap.isEmpty()) {
            throw new ModelFileException(index, 0, "has no weight_map naming the shards");
        }
        Map<String, String> shardOf = new LinkedHashMap<>();
        Set<String> files = new LinkedHashSet<>();
        weightMap.fields().forEachRemaining(e -> {
            shardOf.put(e.getKey(), e.getValue().asText());
            files.add(e.getValue().asText());
        });
        List<StoredModel> shards = new ArrayList<>();
        for (String name : files) {
            // Shards are files beside their index; a path in the map would read whatever it points at.
            if (name.contains("/") || name.contains("\\") || name.startsWith(".")) {
                throw new ModelFileException(index, 0, "names a shard that is not a file beside it: " + name);
            }
            Path shard = index.resolveSibling(name);
            if (!Files.isRegularFile(shard)) {
                throw new ModelFileException(shard, 0, "shard named by " + index.getFileName() + " is missing");
            }
            StoredModel model = read.apply(shard);
            for (var tensor : model.tensors()) {
                String expected = shardOf.get(tensor.name());
                if (!name.equals(expected)) {
                    throw new ModelFileException(shard, 0, "holds tensor '" + tensor.name() + "', which " + index.getFileName()
                            + (expected == null ? " does not list" : " places in " + expected));
                }
            }
            shards.add(model);
        }
        JsonNode totalSize = root.path("metadata").path("total_size");
        StoredModel whole = combine(shards.get(0).metadata().getOrDefault("name", folderName(index)), FileFormat.SAFETENSORS, Map.of(), shards);
        if (whole.tensors().size() != shardOf.size()) {
            throw new ModelFileException(index, 0, "lists " + shardOf.size() + " tensors but its shards hold " + whole.tensors().size());
        }
        if (totalSize.canConvertToLong() && totalSize.asLong() != whole.tensorBytes()) {
            throw new ModelFileException(index, 0, "says total_size " + totalSize.asLong() + " but its shards' tensors hold " + whole.tensorBytes()
                    + " bytes");
        }
        return whole;
    }

    private static String folderName(Path index) {
        Path folder = index.toAbsolutePath().getParent();
        return folder == null || folder.getFileName() == null ? index.getFileName().toString() : folder.getFileName().toString();
    }

    /** The shards as one model: their tensors in order (no name twice), sizes added up, warnings kept. */
    private static StoredModel combine(String name, FileFormat format, Map<String, String> metadata, List<StoredModel> shards) {
        List<StoredTensor> tensors = new ArrayList<>();
        List<String> warnings = new ArrayList<>();
        Set<String> names = new HashSet<>();
        long size = 0;
        for (StoredModel shard : shards) {
            for (StoredTensor tensor : shard.tensors()) {
                if (!names.add(tensor.name())) {
                    throw new IllegalArgumentException("tensor '" + tensor.name() + "' appears in more than one shard of " + name);
                }
                tensors.add(tensor);
            }
            warnings.addAll(shard.warnings());
            size += shard.sizeBytes();
        }
        return new StoredModel(name, format, size, Optional.empty(), metadata, tensors, warnings);
    }
}
