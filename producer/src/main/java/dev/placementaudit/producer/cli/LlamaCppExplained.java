package dev.placementaudit.producer.cli;

import dev.placementaudit.resolution.llamacpp.LlamaCppPolicy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/** {@code explain --runtime llama.cpp --format json}: a plan, or two plans side by side, as documents. */
final class LlamaCppExplained {
    private LlamaCppExplained() {
    }

    /** Each buffer's size, then every weight in file order with its buffer, domain, layout and llama.cpp's reason. */
    static Map<String, Object> plan(Path file, LlamaCppPolicy.Plan plan) {
        Map<String, Object> doc = header(file, plan);
        doc.put("cpu", plan.cpu().name());
        doc.put("buffers", new TreeMap<>(plan.buffers()));
        doc.put("weights", plan.weights().stream().map(LlamaCppExplained::weight).toList());
        return doc;
    }

    /** Each buffer on both CPUs, then the weights placed differently, with whether their bytes change domain. */
    static Map<String, Object> versus(Path file, LlamaCppPolicy.Plan from, LlamaCppPolicy.Plan to) {
        Map<String, Object> doc = header(file, from);
        doc.put("cpu", from.cpu().name());
        doc.put("versus", to.cpu().name());
        Map<String, Map<String, Long>> buffers = new LinkedHashMap<>();
        TreeSet<String> names = new TreeSet<>(from.buffers().keySet());
        names.addAll(to.buffers().keySet());
        names.forEach(b -> buffers.put(b, Map.of("from", from.buffers().getOrDefault(b, 0L), "to", to.buffers().getOrDefault(b, 0L))));
        doc.put("buffers", buffers);
        List<Map<String, Object>> changed = new ArrayList<>();
        long moved = 0;
        for (Changed c : changes(from, to)) {
            moved += c.domainChanges() ? c.from().weight().bytes() : 0;
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("name", c.from().weight().name());
            row.put("type", c.from().weight().type().name());
            row.put("bytes", c.from().weight().bytes());
            row.put("from", weight(c.from()));
            row.put("to", weight(c.to()));
            row.put("domainChanges", c.domainChanges());
            changed.add(row);
        }
        doc.put("weightsPlacedDifferently", changed.size());
        doc.put("bytesChangingDomain", moved);
        doc.put("changed", changed);
        return doc;
    }

    /** A weight placed differently by two plans of one file: another buffer or another repack layout. */
    record Changed(LlamaCppPolicy.Placed from, LlamaCppPolicy.Placed to) {
        boolean domainChanges() {
            return from.domain() != to.domain();
        }
    }

    /** The weights the two plans place differently, in file order: what {@code --versus} prints as a table or a document. */
    static List<Changed> changes(LlamaCppPolicy.Plan from, LlamaCppPolicy.Plan to) {
        List<Changed> changed = new ArrayList<>();
        for (int i = 0; i < from.weights().size(); i++) {
            LlamaCppPolicy.Placed a = from.weights().get(i);
            LlamaCppPolicy.Placed b = to.weights().get(i);
            if (!a.buffer().equals(b.buffer()) || !a.layout().equals(b.layout())) {
                changed.add(new Changed(a, b));
            }
        }
        return changed;
    }

    private static Map<String, Object> header(Path file, LlamaCppPolicy.Plan plan) {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("file", file.toString());
        doc.put("runtime", LlamaCppOptions.RUNTIME);
        doc.put("build", plan.build());
        doc.put("mmap", plan.mmap());
        return doc;
    }

    private static Map<String, Object> weight(LlamaCppPolicy.Placed p) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("name", p.weight().name());
        row.put("type", p.weight().type().name());
        row.put("bytes", p.weight().bytes());
        row.put("buffer", p.buffer());
        row.put("domain", p.domain().name());
        row.put("layout", p.layout().orElse(null));
        row.put("reason", p.detail());
        return row;
    }
}
