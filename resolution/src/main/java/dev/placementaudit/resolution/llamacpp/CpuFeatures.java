package dev.placementaudit.resolution.llamacpp;

import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The CPU features llama.cpp's repack selection asks about ({@code ggml_cpu_has_*}), as a named CPU or as llama.cpp's
 * own {@code system_info} line reports them.
 */
public record CpuFeatures(String name, Set<Feature> features) {
    /** What ggml asks of a CPU before it repacks a weight. */
    public enum Feature { AVX2, NEON, DOTPROD, MATMUL_INT8, SVE_256, AARCH64_REPACK }

    /** CPUs a user names with {@code --cpu}: each a common server or edge CPU of its kind. */
    public static final Map<String, CpuFeatures> NAMED = named();

    public CpuFeatures {
        features = Set.copyOf(features);
    }

    private static Map<String, CpuFeatures> named() {
        Map<String, CpuFeatures> cpus = new TreeMap<>();
        cpus.put("avx2", new CpuFeatures("avx2", EnumSet.of(Feature.AVX2, Feature.AARCH64_REPACK)));
        cpus.put("x86-sse", new CpuFeatures("x86-sse", EnumSet.of(Feature.AARCH64_REPACK)));
        cpus.put("arm-dotprod", new CpuFeatures("arm-dotprod", EnumSet.of(Feature.NEON, Feature.DOTPROD, Feature.AARCH64_REPACK)));
        cpus.put("arm-i8mm", new CpuFeatures("arm-i8mm", EnumSet.of(Feature.NEON, Feature.DOTPROD, Feature.MATMUL_INT8, Feature.AARCH64_REPACK)));
        cpus.put("arm-sve256", new CpuFeatures("arm-sve256", EnumSet.of(Feature.NEON, Feature.DOTPROD, Feature.MATMUL_INT8, Feature.SVE_256,
                Feature.AARCH64_REPACK)));
        return Map.copyOf(cpus);
    }

    /** A CPU by its name; the error names those there are. */
    public static CpuFeatures named(String name) {
        CpuFeatures cpu = NAMED.get(name.toLowerCase(Locale.ROOT));
        if (cpu == null) {
            throw new IllegalArgumentException("no CPU named '" + name + "'; there are " + String.join(", ", new java.util.TreeSet<>(NAMED.keySet())));
        }
        return cpu;
    }

    private static final Pattern FLAG = Pattern.compile("([A-Z0-9_]+) = (\\d+)");

    /**
     * The features llama.cpp's {@code system_info} line reports, e.g. {@code CPU : SSE3 = 1 | AVX2 = 1 | ... |
     * AARCH64_REPACK = 1 |}. SVE's vector length is not in the line: an SVE CPU is taken as 256-bit only when named.
     */
    public static CpuFeatures fromSystemInfo(String line) {
        Set<Feature> found = EnumSet.noneOf(Feature.class);
        Matcher m = FLAG.matcher(line);
        while (m.find()) {
            if (!m.group(2).equals("1")) {
                continue;
            }
            switch (m.group(1)) {
                case "AVX2" -> found.add(Feature.AVX2);
                case "NEON" -> found.add(Feature.NEON);
                case "DOTPROD" -> found.add(Feature.DOTPROD);
                case "MATMUL_INT8" -> found.add(Feature.MATMUL_INT8);
                case "AARCH64_REPACK" -> found.add(Feature.AARCH64_REPACK);
                default -> {
                }
            }
        }
        return new CpuFeatures("reported", found);
    }

    /**
     * The CPU a load names by its features (as {@link #describe} writes them): the named CPU with exactly these features if
     * there is one, so a plan reads "avx2", else one named by the features. Names this build of the audit does not know are
     * ignored: they pick no kernel of the builds it models.
     */
    public static CpuFeatures fromNames(java.util.Collection<String> names) {
        Set<Feature> found = EnumSet.noneOf(Feature.class);
        for (String name : names) {
            for (Feature feature : Feature.values()) {
                if (feature.name().equalsIgnoreCase(name)) {
                    found.add(feature);
                }
            }
        }
        for (CpuFeatures cpu : NAMED.values()) {
            if (cpu.features().equals(found)) {
                return cpu;
            }
        }
        return new CpuFeatures(found.isEmpty() ? "no features" : String.join("+", found.stream().map(f -> f.name().toLowerCase(Locale.ROOT))
                .sorted().toList()), found);
    }

    public boolean has(Feature feature) {
        return features.contains(feature);
    }

    /** The features as llama.cpp names them, sorted: what a load names its CPU by ({@link #fromNames} reads them back). */
    public List<String> names() {
        return features.stream().map(Enum::name).sorted().toList();
    }

    /** The features as llama.cpp names them, for a load's context: {@code AVX2,AARCH64_REPACK}. */
    public String describe() {
        return String.join(",", names());
    }
}
