package dev.placementaudit.store.cli;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.store.cli.AuditStoreCli.Common;
import dev.placementaudit.store.cli.AuditStoreCli.Limit;
import dev.placementaudit.store.query.AlertQueries;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

@Command(name = "alerts", mixinStandardHelpOptions = true, description = "Alerts raised, newest first (suppressed ones say by what).")
final class AlertsCommand implements Callable<Integer> {
    @Mixin Common common = new Common();
    @Option(names = "--deployment", description = "only this deployment's alerts") String deployment;
    @Mixin Limit limit = new Limit();

    @Override
    public Integer call() throws Exception {
        int most = limit.value();
        return common.show(db -> common.queries(db).alerts(deployment, most), (o, alerts) -> {
            for (AlertQueries.AlertRow a : alerts) {
                o.printf(Locale.ROOT, "%s %-15s %-16s %s %s -> %s  %s%s (%s)%s%n", a.detectedAt(), a.kind(), a.deploymentId(), a.modelId(),
                        a.fromRelease(), a.toRelease(), a.deltaBytes() >= 0 ? "+" : "-", ByteSizes.format(Math.abs(a.deltaBytes())), a.rule(),
                        a.suppressedBy() == null ? "" : "  [suppressed: " + a.suppressedBy() + "]");
                o.printf(Locale.ROOT, "    loads %s -> %s%n", a.fromLoadId(), a.toLoadId());
                a.causes().forEach(cause -> o.println("    why: " + cause.cause()));
                if (!a.topTensors().isEmpty()) {
                    o.println("    top: " + a.topTensors().stream().map(t -> t.name() + " " + t.placement()).collect(Collectors.joining("; ")));
                }
            }
            limit.sayIfCut(o, alerts.size());
        });
    }
}
