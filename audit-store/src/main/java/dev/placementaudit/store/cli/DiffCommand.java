package dev.placementaudit.store.cli;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.store.cli.AuditStoreCli.Common;
import dev.placementaudit.store.query.LoadQueries;
import dev.placementaudit.store.regression.Finding;
import dev.placementaudit.store.regression.RootCauses;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.Locale;
import java.util.concurrent.Callable;

@Command(name = "diff", mixinStandardHelpOptions = true, description = "Compare two releases of a deployment's model, tensor by tensor.")
final class DiffCommand implements Callable<Integer> {
    @Mixin Common common = new Common();
    @Option(names = "--deployment", required = true, description = "the deployment") String deployment;
    @Option(names = "--model", required = true, description = "the model id, e.g. llama-3.2-1b-q4km") String model;
    @Option(names = "--from", required = true, description = "the earlier release") String from;
    @Option(names = "--to", required = true, description = "the later release") String to;
    @Option(names = "--from-runtime", paramLabel = "TEXT", description = "the earlier side: the latest load whose runtime begins with TEXT, "
            + "e.g. 'llama.cpp b4916' (two llama.cpp builds on one release: --from r2 --to r2)") String fromRuntime;
    @Option(names = "--to-runtime", paramLabel = "TEXT", description = "the later side: the latest load whose runtime begins with TEXT") String toRuntime;
    @Option(names = "--tensors", paramLabel = "N", defaultValue = "5", description = "tensors to list under each root cause, largest "
            + "change first (default: ${DEFAULT-VALUE})") int tensors;
    @Option(names = "--findings", description = "also list every tensor's findings with both decisions' reasons") boolean findings;

    @Override
    public Integer call() throws Exception {
        if (tensors < 0) {
            throw common.usage("--tensors must be 0 or more, got " + tensors);
        }
        return common.show(db -> common.queries(db).diff(deployment, model, from, to, fromRuntime, toRuntime).orElseThrow(() ->
                new IllegalArgumentException("no complete load of " + model + " on " + deployment + " for " + side(from, fromRuntime) + " and "
                        + side(to, toRuntime))), (o, report) -> {
            o.printf(Locale.ROOT, "%s %s: %s -> %s  off-heap %s -> %s  heap %s -> %s  mapped %s -> %s%n", deployment, model, from, to,
                    ByteSizes.format(report.from().offHeapBytes()), ByteSizes.format(report.to().offHeapBytes()),
                    ByteSizes.format(report.from().heapBytes()), ByteSizes.format(report.to().heapBytes()),
                    ByteSizes.format(report.from().mappedBytes()), ByteSizes.format(report.to().mappedBytes()));
            if (report.from().runtime() != null || report.to().runtime() != null) {
                o.printf(Locale.ROOT, "  runtime %s -> %s%n", runtimeOf(report.from()), runtimeOf(report.to()));
            }
            o.printf(Locale.ROOT, "  %d root causes, largest first:%n", report.causes().size());
            int n = 0;
            for (RootCauses.CauseGroup group : report.causes()) {
                o.printf(Locale.ROOT, "  %d. %s%n", ++n, group.cause());
                if (group.beforeReason() != null && group.afterReason() != null && !group.beforeReason().equals(group.afterReason())) {
                    o.printf(Locale.ROOT, "     reason %s -> %s%n", group.beforeReason(), group.afterReason());
                }
                group.tensors().stream().limit(tensors).forEach(t -> o.printf(Locale.ROOT, "     %-40s %s%n", t.name(), t.placement()));
                if (group.tensorCount() > tensors) {
                    o.printf(Locale.ROOT, "     ... and %d more (--tensors N)%n", group.tensorCount() - tensors);
                }
            }
            o.println("  findings " + report.countsByKind());
            for (Finding f : report.findings()) {
                if (f.tensorName() == null) {
                    o.printf(Locale.ROOT, "  %-15s %s -> %s  %s%n", f.kind(), ByteSizes.format(f.beforeBytes()), ByteSizes.format(f.afterBytes()),
                            f.afterReason());
                } else if (findings) {
                    o.printf(Locale.ROOT, "  %-15s %-40s %s -> %s  %s -> %s%n      before: %s%n      after:  %s%n", f.kind(), f.tensorName(),
                            f.beforeDomain(), f.afterDomain(), ByteSizes.format(f.beforeBytes()), ByteSizes.format(f.afterBytes()),
                            f.beforeReason(), f.afterReason());
                }
            }
        });
    }

    private static String runtimeOf(dev.placementaudit.store.query.LoadQueries.LoadSummary load) {
        return load.runtime() == null ? "SKaiNET's rules" : load.runtime();
    }

    private static String side(String release, String runtime) {
        return runtime == null ? release : release + " (runtime " + runtime + "...)";
    }
}
