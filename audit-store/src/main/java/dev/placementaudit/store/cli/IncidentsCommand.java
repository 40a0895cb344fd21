package dev.placementaudit.store.cli;

import dev.placementaudit.store.cli.AuditStoreCli.Common;
import dev.placementaudit.store.cli.AuditStoreCli.Limit;
import dev.placementaudit.store.incidents.Incidents;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.time.Instant;
import java.util.Locale;
import java.util.concurrent.Callable;

@Command(name = "incidents", mixinStandardHelpOptions = true,
        description = "One line per cause across the fleet: what changed, between which releases, and on how many deployments.")
final class IncidentsCommand implements Callable<Integer> {
    @Mixin Common common = new Common();
    @Option(names = "--open", description = "only incidents a deployment still shows") boolean open;
    @Option(names = "--release", description = "only incidents of the move to this release") String release;
    @Option(names = "--model", description = "only incidents of this model id") String model;
    @Mixin Limit limit = new Limit();

    @Override
    public Integer call() throws Exception {
        int most = limit.value();
        return common.show(db -> common.queries(db).incidents(open, release, model, most), (o, incidents) -> {
            if (incidents.isEmpty()) {
                o.println(open ? "no open incidents" : "no incidents");
            }
            Instant now = Instant.now();
            incidents.forEach(i -> print(o, i, now));
            limit.sayIfCut(o, incidents.size());
        });
    }

    /** "inc-... OPEN  llama r1 -> r2  LOST_MAPPING  3 of 4 deployments (75%)", then the cause and its acknowledgement. */
    /** {@code r1 -> r2} for a change between releases; {@code on r2} for what a runtime said of its loads on one release. */
    static String releases(Incidents.Incident i) {
        return i.fromRelease() == null || i.fromRelease().equals(i.toRelease()) ? "on " + i.toRelease() : i.fromRelease() + " -> " + i.toRelease();
    }

    static void print(PrintWriter o, Incidents.Incident i, Instant now) {
        o.printf(Locale.ROOT, "%s %-8s %s %s  %s  %s%s%n", i.incidentId(), i.state(), i.modelId(), releases(i), i.primaryKind(), i.exposureText(), i.acknowledged() != null && i.acknowledged().activeAt(now) ? "  [acknowledged]" : "");
        o.printf(Locale.ROOT, "    %s%n", i.cause());
        o.printf(Locale.ROOT, "    seen %s .. %s in %d load(s) of %d deployment(s)%s%n", i.firstSeen(), i.lastSeen(), i.loads(), i.affected(),
                i.acknowledged() == null ? "" : "; " + i.acknowledged().describe(now));
    }
}
