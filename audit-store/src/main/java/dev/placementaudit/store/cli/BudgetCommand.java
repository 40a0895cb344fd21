package dev.placementaudit.store.cli;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.store.cli.AuditStoreCli.BudgetKind;
import dev.placementaudit.store.cli.AuditStoreCli.Common;
import dev.placementaudit.store.db.AuditDatabase;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

@Command(name = "budget", mixinStandardHelpOptions = true,
        description = "Declare the growth a deployment's release is expected to bring; within it no alert is raised.")
final class BudgetCommand implements Callable<Integer> {
    @Mixin Common common = new Common();
    @Option(names = "--deployment", required = true, description = "the deployment the budget is for") String deployment;
    @Option(names = "--release", required = true, description = "the release expected to grow") String release;
    @Option(names = "--kind", defaultValue = "OFFHEAP_GROWTH", description = "${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE})") BudgetKind kind;
    @Option(names = "--max-delta-bytes", description = "allowed growth; omit to acknowledge any growth") Long maxDelta;
    @Option(names = "--note", required = true, description = "why, e.g. a ticket") String note;

    @Override
    public Integer call() throws Exception {
        try (AuditDatabase db = common.open(); Connection c = db.dataSource().getConnection();
             PreparedStatement s = c.prepareStatement(db.dialect().upsert("growth_budgets",
                     List.of("deployment_id", "release_name", "kind", "max_delta_bytes", "note", "created_at"),
                     List.of("VARCHAR(200)", "VARCHAR(200)", "VARCHAR(30)", "BIGINT", "VARCHAR(1000)", "TIMESTAMP WITH TIME ZONE"),
                     List.of("deployment_id", "release_name", "kind")))) {
            s.setString(1, deployment);
            s.setString(2, release);
            s.setString(3, kind.name());
            s.setObject(4, maxDelta);
            s.setString(5, note);
            s.setTimestamp(6, Timestamp.from(Instant.now()));
            s.executeUpdate();
        }
        common.out().printf(Locale.ROOT, "%s on %s %s: %s (%s)%n", kind, deployment, release,
                maxDelta == null ? "acknowledged" : "budget " + ByteSizes.format(maxDelta), note);
        return 0;
    }
}
