package dev.placementaudit.store.cli;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.service.cli.CommandFailure;
import dev.placementaudit.store.cli.AuditStoreCli.Common;
import dev.placementaudit.store.incidents.Incidents;
import dev.placementaudit.store.regression.FindingKind;
import dev.placementaudit.store.regression.RootCauses;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

@Command(name = "incident", mixinStandardHelpOptions = true,
        description = "One incident: its cause, its tensors, and every deployment that showed it, with the bytes it moved there.")
final class IncidentCommand implements Callable<Integer> {
    @Mixin Common common = new Common();
    @Parameters(paramLabel = "INCIDENT", description = "the incident's id, or enough of its start to name one") String id;

    @Override
    public Integer call() throws Exception {
        return common.show(db -> {
            try (Connection c = db.dataSource().getConnection()) {
                return find(c, id);
            }
        }, (o, d) -> {
            Incidents.Incident i = d.incident();
            IncidentsCommand.print(o, i, Instant.now());
            boolean runtime = !i.kinds().isEmpty() && i.kinds().stream().allMatch(k -> FindingKind.valueOf(k).ofRuntime());
            // A runtime's incident is planned against observed on one release; the others are one release against the one before.
            o.printf(Locale.ROOT, "    %s %s%n", runtime ? "planned: " : "before:  ", side(d.beforeDomain(), d.beforeFormat(), d.beforeReason()));
            o.printf(Locale.ROOT, "    %s %s%n", runtime ? "observed:" : "after:   ", side(d.afterDomain(), d.afterFormat(), d.afterReason()));
            o.printf(Locale.ROOT, "    kinds: %s%n", String.join(", ", i.kinds()));
            if (i.tensorCount() == 0) {
                o.println(runtime ? "tensors: none named (the runtime measured bytes per domain, not tensors)" : "tensors: none named");
            } else {
                o.printf(Locale.ROOT, "tensors (%d):%n", i.tensorCount());
                d.tensors().forEach(t -> o.println("    " + t));
            }
            o.printf(Locale.ROOT, "deployments (%d showing it now, %d ever):%n", i.showing(), i.affected());
            for (Incidents.Deployment dep : d.deployments()) {
                o.printf(Locale.ROOT, "    %-24s %-8s %3d load(s)  %s moved  off-heap %s%s  seen %s .. %s  last load %s%n", dep.deploymentId(),
                        dep.showing() ? "showing" : "left", dep.loads(), ByteSizes.format(dep.bytesMoved()), dep.offHeapDelta() >= 0 ? "+" : "-",
                        ByteSizes.format(Math.abs(dep.offHeapDelta())), dep.firstSeen(), dep.lastSeen(), dep.lastLoadId());
            }
            o.printf(Locale.ROOT, "exposure over time (deployments showing it, of %d on %s now):%n", i.onRelease(), i.toRelease());
            d.exposureOverTime().forEach(p -> o.printf(Locale.ROOT, "    %s  %d%n", p.at(), p.showing()));
        });
    }

    /** The incident an id or prefix names; a usage failure (exit 2) naming what was looked for when none or several do. */
    static Incidents.Detail find(Connection c, String id) throws SQLException {
        try {
            return Incidents.find(c, id).orElseThrow(() -> new CommandFailure("no incident '" + id + "' in the store: `store incidents` lists them"));
        } catch (IllegalArgumentException e) {
            throw new CommandFailure(e.getMessage());
        }
    }

    /** One side of the cause: its domain, format and reason, those it has ({@code off-heap, planned}; never a {@code null}). */
    static String side(String domain, String format, String reason) {
        List<String> parts = new ArrayList<>();
        parts.add(domain == null ? "(none)" : RootCauses.domainName(domain));
        if (format != null) {
            parts.add(format);
        }
        if (reason != null) {
            parts.add(reason);
        }
        return String.join(", ", parts);
    }
}
