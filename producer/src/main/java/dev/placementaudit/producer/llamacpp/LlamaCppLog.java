package dev.placementaudit.producer.llamacpp;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What llama.cpp's own log says about a load: each model buffer's size (in MiB, two decimals, as it prints them), each
 * weight it repacked and to which layout, and the CPU features it found. Lines as llama.cpp b4916 writes them:
 * {@code load_tensors:  CPU_AARCH64 model buffer size =     0.84 MiB}, {@code repack: repack tensor blk.0.attn_q.weight
 * with q4_0_8x8}, {@code system_info: ... CPU : SSE3 = 1 | AVX2 = 1 | ...}.
 */
public record LlamaCppLog(Map<String, Double> buffersMiB, Map<String, String> repacked, Optional<String> systemInfo) {
    private static final Pattern BUFFER = Pattern.compile("(\\S+) model buffer size =\\s*([0-9.]+) MiB");
    private static final Pattern REPACK = Pattern.compile("repack: repack tensor (\\S+) with (\\S+)");

    public LlamaCppLog {
        buffersMiB = Map.copyOf(buffersMiB);
        repacked = Map.copyOf(repacked);
    }

    public static LlamaCppLog parse(List<String> lines) {
        Map<String, Double> buffers = new LinkedHashMap<>();
        Map<String, String> repacked = new LinkedHashMap<>();
        String systemInfo = null;
        for (String line : lines) {
            Matcher buffer = BUFFER.matcher(line);
            if (buffer.find()) {
                buffers.merge(buffer.group(1), Double.parseDouble(buffer.group(2)), Double::sum);
            }
            Matcher repack = REPACK.matcher(line);
            while (repack.find()) {
                repacked.put(repack.group(1), repack.group(2));
            }
            if (line.contains("system_info:")) {
                systemInfo = line.substring(line.indexOf("system_info:")).trim();
            }
        }
        return new LlamaCppLog(buffers, repacked, Optional.ofNullable(systemInfo));
    }
}
