package dev.placementaudit.store.cli;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.store.cli.AuditStoreCli.Common;
import dev.placementaudit.store.cli.AuditStoreCli.Limit;
import dev.placementaudit.store.cli.AuditStoreCli.LoadFilter;
import dev.placementaudit.store.query.LoadQueries;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

import static dev.placementaudit.store.cli.AuditStoreCli.completeness;

@Command(name = "where", mixinStandardHelpOptions = true, description = "Where every tensor landed: a deployment's loads, or one load in full.")
final class WhereCommand implements Callable<Integer> {
    @Mixin Common common = new Common();
    @Mixin LoadFilter filter = new LoadFilter();
    @Option(names = "--release", description = "only loads of this release") String release;
    @Option(names = "--load", description = "one load id: every tensor, its domain and reason") String load;
    @Mixin Limit limit = new Limit();

    @Override
    public Integer call() throws Exception {
        int most = limit.value();
        if (load != null) {
            return common.show(db -> common.queries(db).load(load).orElseThrow(() -> new IllegalArgumentException("no load " + load)),
                    (o, detail) -> {
                        var l = detail.load();
                        o.printf(Locale.ROOT, "%s  %s %s  %s  %d tensors  heap %s  off-heap %s  mapped %s%n", l.loadId(), l.deploymentId(),
                                l.release(), l.modelId(), l.tensorCount(), ByteSizes.format(l.heapBytes()), ByteSizes.format(l.offHeapBytes()),
                                ByteSizes.format(l.mappedBytes()));
                        if (l.runtime() != null) {
                            o.printf(Locale.ROOT, "  runtime %s: planned under its rules%n", l.runtime());
                        }
                        detail.tensors().forEach(t -> o.printf(Locale.ROOT, "  %-40s %-13s %10s  %-20s %s%s%n", t.name(), t.domain(),
                                ByteSizes.format(t.residentBytes()), t.reasonCode(), t.residentFormat(),
                                t.sizeEstimated() ? "  size estimated (unknown type)" : ""));
                        observed(o, detail);
                        long estimated = detail.tensors().stream().filter(LoadQueries.TensorRow::sizeEstimated).count();
                        if (estimated > 0) {
                            o.printf(Locale.ROOT, "  %d of %d tensors have an estimated size: the producer did not know their type%n",
                                    estimated, detail.tensors().size());
                        }
                        setAside(o, detail.setAside());
                    });
        }
        return common.show(db -> common.queries(db).loads(filter.deployment, filter.model, release, most), (o, loads) -> {
            o.printf(Locale.ROOT, "%-36s %-16s %-10s %-20s %-8s %10s %10s %10s%n", "load", "deployment", "release", "model", "complete",
                    "heap", "off-heap", "mapped");
            loads.forEach(l -> o.printf(Locale.ROOT, "%-36s %-16s %-10s %-20s %-8s %10s %10s %10s%n", l.loadId(), l.deploymentId(),
                    l.release(), l.modelId(), completeness(l), ByteSizes.format(l.heapBytes()), ByteSizes.format(l.offHeapBytes()),
                    ByteSizes.format(l.mappedBytes())));
        });
    }

    /** Planned beside what the runtime measured, then what it placed otherwise and what that gave. */
    private static void observed(PrintWriter o, LoadQueries.LoadDetail detail) {
        var l = detail.load();
        LoadQueries.Observed seen = detail.observed();
        if (seen == null) {
            o.println("  observed: nothing reported by the runtime (yet)");
        } else {
            o.printf(Locale.ROOT, "  observed by the runtime at %s (%s):%n", seen.observedAt(), seen.method());
            o.printf(Locale.ROOT, "    %-9s %12s %12s %14s%n", "domain", "planned", "observed", "unplanned");
            row(o, "heap", l.heapBytes(), seen.heapBytes());
            row(o, "off-heap", l.offHeapBytes(), seen.offHeapBytes());
            row(o, "mapped", l.mappedBytes(), seen.mappedBytes());
            if (seen.fileMappedBytes() != null) {
                o.printf(Locale.ROOT, "    model file mapped %s, resident %s%n", ByteSizes.format(seen.fileMappedBytes()),
                        seen.fileResidentBytes() == null ? "?" : ByteSizes.format(seen.fileResidentBytes()));
            }
            if (seen.anonRssDeltaBytes() != null) {
                o.printf(Locale.ROOT, "    anonymous RSS %s%n", ByteSizes.format(seen.anonRssDeltaBytes()));
            }
        }
        if (!detail.divergences().isEmpty()) {
            o.printf(Locale.ROOT, "  the runtime placed %d tensor(s) otherwise than the reference:%n", detail.divergences().size());
            detail.divergences().forEach(d -> o.printf(Locale.ROOT, "    %-40s runtime %s %s, reference %s %s (%s)%n", d.tensorName(),
                    d.runtimeDomain(), ByteSizes.format(d.runtimeBytes()), d.referenceDomain(), ByteSizes.format(d.referenceBytes()),
                    d.referenceReasonCode()));
        }
        detail.runtimeFindings().forEach(f -> o.printf(Locale.ROOT, "  finding %s (%s): %s%n", f.kind(), f.incidentId(),
                f.kind().equals("MAPPING_NOT_OBSERVED") ? ByteSizes.format(f.bytesMoved()) + " planned mapped not seen mapped"
                        : f.kind().equals("UNPLANNED_OFFHEAP") ? ByteSizes.format(f.offHeapDelta()) + " off-heap the plan does not account for"
                        : ByteSizes.format(f.bytesMoved()) + " placed otherwise"));
    }

    /**
     * Records that came under this load's id but are no part of it: a warning per kind and reason (a conflicting load's
     * decisions and summary are one), with where they stand in the log.
     */
    private static void setAside(PrintWriter o, List<LoadQueries.SetAside> setAside) {
        Map<List<String>, List<LoadQueries.SetAside>> byReason = new LinkedHashMap<>();
        setAside.forEach(letter -> byReason.computeIfAbsent(List.of(letter.detail(), letter.error()), k -> new ArrayList<>()).add(letter));
        byReason.forEach((reason, letters) -> {
            List<String> where = letters.stream().limit(3).map(l -> l.topic() + "-" + l.partition() + "@" + l.offset()).toList();
            o.printf(Locale.ROOT, "  warning: %d record(s) set aside as %s since %s (%s%s): %s%n", letters.size(), reason.get(0),
                    letters.get(0).at(), String.join(", ", where), letters.size() > 3 ? " and " + (letters.size() - 3) + " more" : "", reason.get(1));
        });
    }

    private static void row(PrintWriter o, String domain, long planned, Long observed) {
        o.printf(Locale.ROOT, "    %-9s %12s %12s %14s%n", domain, ByteSizes.format(planned), observed == null ? "-" : ByteSizes.format(observed),
                observed == null ? "-" : ByteSizes.format(observed - planned));
    }

}
