package dev.placementaudit.store.cli;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.store.cli.AuditStoreCli.StoreOptions;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.incidents.Incidents;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.sql.Connection;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

@Command(name = "gate", mixinStandardHelpOptions = true,
        description = {"A release gate for CI/CD: exit 0 when no open, unacknowledged incident touches the release (or none reaches "
                + "--max-exposure), 1 when one does, printing them. --format junit writes JUnit XML for a pipeline's test report.",
                "Exit codes: 0 pass, 1 blocked, 2 bad usage or a store that cannot be read."})
final class GateCommand implements Callable<Integer> {
    /** How the verdict is printed. */
    enum GateFormat { table, json, junit }

    /** The exit code of a release the gate holds back. */
    static final int BLOCKED = 1;

    @Mixin StoreOptions common = new StoreOptions();
    @Option(names = "--format", defaultValue = "table", description = "output: ${COMPLETION-CANDIDATES}: junit writes a JUnit report, one "
            + "test case per open incident (default: ${DEFAULT-VALUE})") GateFormat format;
    @Option(names = "--release", required = true, description = "the release about to roll on") String release;
    @Option(names = "--model", description = "only incidents of this model id") String model;
    @Option(names = "--max-exposure", paramLabel = "PCT", description = "let an incident pass while under this share of the release's "
            + "deployments (0-100); default: any open incident blocks") Double maxExposure;

    /** What the gate decided, and on what. */
    record Verdict(String release, String model, Double maxExposure, boolean pass, List<Incidents.Incident> blocking,
                   List<Incidents.Incident> passing) {
    }

    @Override
    public Integer call() throws Exception {
        if (maxExposure != null && (maxExposure < 0 || maxExposure > 100)) {
            throw common.usage("--max-exposure must be between 0 and 100, got " + maxExposure);
        }
        Instant now = Instant.now();
        Verdict verdict;
        try (AuditDatabase db = common.open(); Connection c = db.dataSource().getConnection()) {
            List<Incidents.Incident> open = Incidents.list(c, true, release, model);
            List<Incidents.Incident> blocking = open.stream().filter(i -> blocks(i, now)).toList();
            List<Incidents.Incident> passing = open.stream().filter(i -> !blocks(i, now)).toList();
            verdict = new Verdict(release, model, maxExposure, blocking.isEmpty(), blocking, passing);
        }
        PrintWriter o = common.out();
        if (format == GateFormat.junit) {
            junit(o, verdict, now);
        } else if (format == GateFormat.json) {
            common.printJson(verdict);
        } else {
            text(o, verdict, now);
        }
        return verdict.pass() ? 0 : BLOCKED;
    }

    private boolean blocks(Incidents.Incident i, Instant now) {
        return i.paging(now) && (maxExposure == null || i.exposure() * 100 >= maxExposure);
    }

    private String scope() {
        return release + (model == null ? "" : " (" + model + ")");
    }

    private void text(PrintWriter o, Verdict v, Instant now) {
        if (v.pass()) {
            o.printf(Locale.ROOT, "gate %s: pass - no open, unacknowledged incident%s%n", scope(),
                    maxExposure == null ? "" : String.format(Locale.ROOT, " at or over %.0f%% exposure", maxExposure));
        } else {
            o.printf(Locale.ROOT, "gate %s: BLOCKED by %d incident(s)%n", scope(), v.blocking().size());
            v.blocking().forEach(i -> IncidentsCommand.print(o, i, now));
        }
        if (!v.passing().isEmpty()) {
            o.printf(Locale.ROOT, "let through (%d): acknowledged or under --max-exposure%n", v.passing().size());
            v.passing().forEach(i -> IncidentsCommand.print(o, i, now));
        }
    }

    /** One test case per open incident (a failure when it blocks), or one passing case when there is none. */
    private void junit(PrintWriter o, Verdict v, Instant now) {
        Map<Incidents.Incident, Boolean> cases = new LinkedHashMap<>();
        v.blocking().forEach(i -> cases.put(i, true));
        v.passing().forEach(i -> cases.put(i, false));
        String suite = "placement-audit gate " + scope();
        o.println("<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
        o.printf(Locale.ROOT, "<testsuites><testsuite name=\"%s\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"0\" timestamp=\"%s\">%n",
                xml(suite), Math.max(1, cases.size()), v.blocking().size(), now);
        if (cases.isEmpty()) {
            o.printf(Locale.ROOT, "  <testcase classname=\"%s\" name=\"no open incident\"/>%n", xml(suite));
        }
        cases.forEach((i, blocks) -> {
            String name = i.incidentId() + " " + i.modelId() + " " + IncidentsCommand.releases(i) + " " + i.primaryKind();
            String body = i.cause() + "\n" + i.exposureText() + ", " + ByteSizes.format(i.bytesMoved()) + " moved"
                    + (i.acknowledged() == null ? "" : "\n" + i.acknowledged().describe(now));
            o.printf(Locale.ROOT, "  <testcase classname=\"%s\" name=\"%s\">%n", xml(suite), xml(name));
            if (blocks) {
                o.printf(Locale.ROOT, "    <failure message=\"%s\" type=\"%s\">%s</failure>%n", xml(i.cause()), xml(i.primaryKind()), xml(body));
            } else {
                o.printf(Locale.ROOT, "    <system-out>%s</system-out>%n", xml("let through: " + body));
            }
            o.println("  </testcase>");
        });
        o.println("</testsuite></testsuites>");
    }

    private static String xml(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
