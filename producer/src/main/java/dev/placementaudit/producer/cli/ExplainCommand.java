package dev.placementaudit.producer.cli;

import dev.placementaudit.core.placement.AllocationDecision;
import dev.placementaudit.core.placement.AllocationResolver;
import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.core.placement.MemoryDomain;
import dev.placementaudit.core.placement.PlanTensor;
import dev.placementaudit.core.placement.PlannerProfile;
import dev.placementaudit.core.placement.StorageCapabilities;
import dev.placementaudit.core.placement.WeightForm;
import dev.placementaudit.producer.model.Platforms;
import dev.placementaudit.producer.model.StoredModel;
import dev.placementaudit.producer.model.StoredTensor;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

@Command(name = "explain", mixinStandardHelpOptions = true,
        description = "Show where every tensor of a model file would land for a deployment, without publishing anything.")
final class ExplainCommand implements Callable<Integer> {
    @Mixin ModelFileOption model = new ModelFileOption();

    @Mixin PlanOptions plan = new PlanOptions();

    @Option(names = "--all", description = "list every tensor (default: the 20 largest)") boolean all;

    @Mixin LlamaCppOptions llamaCpp = new LlamaCppOptions();

    @Option(names = "--format", defaultValue = "table", description = "table or json (json: every tensor, whatever --all) (default: ${DEFAULT-VALUE})")
    LoadCommand.Format format;

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        if (llamaCpp.llamaCpp()) {
            return llamaCpp.explain(out, model.file, all, format == LoadCommand.Format.json);
        }
        StoredModel stored = model.read();
        PlannerProfile plannerProfile = plan.plannerProfile();
        StorageCapabilities caps = Platforms.byName(plan.platform);
        Map<String, WeightForm> forms = plan.formPolicy(plannerProfile).forms(stored.tensors());
        List<AllocationDecision> decisions = new ArrayList<>();
        for (StoredTensor tensor : stored.tensors()) {
            decisions.add(AllocationResolver.resolve(new PlanTensor(tensor.name(), tensor.format(), tensor.elementCount(),
                    tensor.storedBytes(), forms.get(tensor.name())), plannerProfile, caps));
        }
        Map<MemoryDomain, long[]> totals = new EnumMap<>(MemoryDomain.class);
        decisions.forEach(d -> {
            long[] t = totals.computeIfAbsent(d.domain(), k -> new long[2]);
            t[0]++;
            t[1] += d.residentBytes();
        });
        Set<String> estimated = stored.tensors().stream().filter(StoredTensor::sizeEstimated).map(StoredTensor::name)
                .collect(Collectors.toSet());
        if (format == LoadCommand.Format.json) {
            JsonOut.print(out, document(stored, plannerProfile, totals, decisions, estimated));
            return 0;
        }
        out.printf(Locale.ROOT, "%s: %d tensors, %s stored; profile %s on %s%n", stored.name(), stored.tensors().size(),
                ByteSizes.format(stored.tensorBytes()), plannerProfile.name(), plan.platform);
        stored.warnings().forEach(warning -> out.println("  warning: " + warning));
        totals.forEach((domain, t) -> out.printf(Locale.ROOT, "  %-13s %5d tensors  %10s%n", domain, t[0], ByteSizes.format(t[1])));
        decisions.stream().sorted((a, b) -> Long.compare(b.residentBytes(), a.residentBytes())).limit(all ? Long.MAX_VALUE : 20)
                .forEach(d -> out.println("  " + d.explanation() + (estimated.contains(d.tensorName()) ? " [size estimated]" : "")));
        return 0;
    }

    /** The plan as a document: totals per domain, then every tensor in file order with its domain and reason. */
    private Map<String, Object> document(StoredModel stored, PlannerProfile profile, Map<MemoryDomain, long[]> totals,
                                         List<AllocationDecision> decisions, Set<String> estimated) {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("model", stored.name());
        doc.put("file", model.file.toString());
        doc.put("tensors", stored.tensors().size());
        doc.put("storedBytes", stored.tensorBytes());
        doc.put("profile", profile.name());
        doc.put("platform", plan.platform);
        doc.put("warnings", stored.warnings());
        Map<String, Object> domains = new LinkedHashMap<>();
        totals.forEach((domain, t) -> domains.put(domain.name(), Map.of("tensors", t[0], "residentBytes", t[1])));
        doc.put("domains", domains);
        doc.put("decisions", decisions.stream().map(d -> {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("tensor", d.tensorName());
            row.put("domain", d.domain().name());
            row.put("residentBytes", d.residentBytes());
            row.put("residentFormat", d.residentFormat().toString());
            row.put("placement", d.placement().name());
            row.put("mappingBlockers", d.mappingBlockers().stream().map(Enum::name).toList());
            row.put("sizeEstimated", estimated.contains(d.tensorName()));
            row.put("explanation", d.explanation());
            return row;
        }).toList());
        return doc;
    }
}
