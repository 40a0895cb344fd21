package dev.placementaudit.store.cli;

import dev.placementaudit.service.cli.KafkaReachability;
import dev.placementaudit.store.chain.ChainLog;
import dev.placementaudit.store.chain.ChainVerifier;
import dev.placementaudit.store.chain.VerificationMarks;
import dev.placementaudit.store.cli.AuditStoreCli.Common;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.db.AuditDatabase;
import org.apache.kafka.common.KafkaException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.sql.Connection;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;

@Command(name = "verify", mixinStandardHelpOptions = true,
        description = "Recompute the tamper-evident hash chains from the rows as they are now, and check them against the heads "
                + "the store published to Kafka. Names every broken link; exit 1 if there is one, 0 if every chain holds.")
final class VerifyCommand implements Callable<Integer> {
    @Mixin Common common = new Common();
    @Option(names = "--deployment", paramLabel = "ID", description = "verify one deployment's chain (default: every deployment)") String deployment;
    @Option(names = "--no-log", description = "check the database alone, without the published heads: a store rewritten together "
            + "with its hashes then goes unnoticed (and every entry is read: no mark is trusted without the log)") boolean noLog;
    @Option(names = "--full", description = "read every entry, row and plan of every chain; by default each chain is checked from where "
            + "the last verify found it to agree with a published head, so the cost grows with what is new (a change to an older row "
            + "is found by --full: run it on a schedule)") boolean full;

    @Override
    public Integer call() throws Exception {
        StoreConfig c = common.storeConfig();
        Optional<ChainLog.Published> heads = Optional.empty();
        if (!noLog) {
            // The consumer that reads the heads answers, within the bound, what an admin client's check would (an
            // unreachable broker, a missing topic) in the same one line: one Kafka client's cold start, not two (0.9 s).
            common.requireKafka("verify checks the chains against the heads published to Kafka", ", or pass --no-log to check the database alone");
            try {
                heads = Optional.of(ChainLog.read(c.kafka(), c.chainTopic(), c.groupId(), c.connectTimeout()));
            } catch (KafkaException e) {
                throw KafkaReachability.failure(e, c.kafka(), c.connectTimeout(), List.of(c.chainTopic()));
            }
        }
        ChainVerifier.Report report;
        int marked;
        try (AuditDatabase db = common.open(); Connection connection = db.dataSource().getConnection()) {
            report = full || heads.isEmpty() ? ChainVerifier.verify(connection, Optional.ofNullable(deployment), heads)
                    : ChainVerifier.verifySinceLastMark(connection, Optional.ofNullable(deployment), heads.get());
            // Where the next verify may start: the newest published head each intact chain was checked up to.
            marked = VerificationMarks.write(connection, db.dialect(), report, Instant.now());
        }
        PrintWriter out = common.out();
        if (common.json()) {
            common.printJson(report);
        } else {
            report.breaks().forEach(b -> out.printf(Locale.ROOT, "BROKEN  %s  entry %s  load %s: %s%n", b.deploymentId(),
                    b.seq() == 0 ? "-" : Long.toString(b.seq()), b.loadId(), b.what()));
            Set<String> broken = new HashSet<>();
            report.breaks().forEach(b -> broken.add(b.deploymentId()));
            report.chains().stream().filter(chain -> !broken.contains(chain.deploymentId())).forEach(chain -> out.printf(Locale.ROOT,
                    "ok      %s  %d entries%s, head %s%s%n", chain.deploymentId(), chain.entries(),
                    chain.from() > 0 ? " after entry " + chain.from() + " (verified before, as published)" : "", chain.head().substring(0, 12),
                    chain.publishedHeadChecked() ? ", as published" : ""));
            heads.map(ChainLog.Published::otherProjections).filter(others -> !others.isEmpty()).ifPresent(others -> out.printf(Locale.ROOT,
                    "note: %s also holds the heads of other projections %s; only this projection's (%s) were read%n", c.chainTopic(),
                    others, c.groupId()));
            long sinceMarks = report.chains().stream().filter(chain -> chain.from() > 0).count();
            if (sinceMarks > 0) {
                out.printf(Locale.ROOT, "%d of %d chains checked from the last verify's marks on; --full reads every entry again%n", sinceMarks,
                        report.chains().size());
            }
            if (marked == 0 && report.checkedAgainstLog() && !report.chains().isEmpty()) {
                out.println("note: no mark written for the next verify (the store predates them until `store run` migrates it, or no chain "
                        + "was found to agree with a published head)");
            }
            out.printf(Locale.ROOT, "%d deployments, %d chained loads%s: %s%n", report.chains().size(), report.entries(),
                    report.checkedAgainstLog() ? ", checked against " + c.chainTopic() : ", database only (--no-log)",
                    report.intact() ? "every chain holds" : report.breaks().size() + " broken links in " + broken.size() + " deployments");
        }
        return report.intact() ? 0 : 1;
    }
}
