package dev.placementaudit.store.cli;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.store.cli.AuditStoreCli.Common;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.Locale;
import java.util.concurrent.Callable;

@Command(name = "fleet", mixinStandardHelpOptions = true, description = "One release across the fleet: totals, regressions, drift.")
final class FleetCommand implements Callable<Integer> {
    @Mixin Common common = new Common();
    @Option(names = "--release", required = true, description = "the release to look at across the fleet") String release;

    @Override
    public Integer call() throws Exception {
        return common.show(db -> common.queries(db).fleet(release), (o, report) -> {
            o.printf(Locale.ROOT, "release %s: %d deployments  heap %s  off-heap %s  mapped %s%n", release, report.deployments(),
                    ByteSizes.format(report.heapBytes()), ByteSizes.format(report.offHeapBytes()), ByteSizes.format(report.mappedBytes()));
            o.println("  with regressions: " + report.withRegressions());
            o.println("  drifting from the fleet: " + report.drifting());
            if (report.observed() > 0) {
                o.printf(Locale.ROOT, "  observed by their runtimes: %d of %d heads; off-heap planned %s, observed %s%n", report.observed(),
                        report.rows().size(), ByteSizes.format(report.plannedOffHeapObserved()), ByteSizes.format(report.observedOffHeapBytes()));
            }
            report.rows().forEach(r -> o.printf(Locale.ROOT, "  %-16s %-20s %-8s %-8s off-heap %10s%s  mapped %10s  regressions %d%s%n",
                    r.deploymentId(), r.modelId(), r.platform(), r.profile(), ByteSizes.format(r.offHeapBytes()),
                    r.observedOffHeapBytes() == null ? "" : " (observed " + ByteSizes.format(r.observedOffHeapBytes()) + ")",
                    ByteSizes.format(r.mappedBytes()), r.regressions(), r.driftsFromFleet() ? "  DRIFT" : ""));
        });
    }
}
