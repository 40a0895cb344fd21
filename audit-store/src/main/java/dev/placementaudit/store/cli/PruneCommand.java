package dev.placementaudit.store.cli;

import dev.placementaudit.service.ConfigException;
import dev.placementaudit.service.Settings;
import dev.placementaudit.service.cli.CommandFailure;
import dev.placementaudit.store.chain.ChainHead;
import dev.placementaudit.store.chain.ChainLog;
import dev.placementaudit.store.chain.HashChain;
import dev.placementaudit.store.cli.AuditStoreCli.Common;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.retention.Retention;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
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

@Command(name = "prune", mixinStandardHelpOptions = true,
        description = "Drop old loads from the projection (decisions, findings, alerts and all): those before a cutoff, or of all but "
                + "the latest N releases; keeping "
                + "each deployment and model's latest load and the one it was compared with. The decision log keeps them: rebuild "
                + "brings them back. The hash chain is cut at its start, and its new anchor published to the chain topic. On PostgreSQL a "
                + "month of loads wholly before the cutoff is dropped as a partition, in one transaction with the rest.")
final class PruneCommand implements Callable<Integer> {
    @Mixin Common common = new Common();
    @Option(names = "--older-than", paramLabel = "DURATION", description = "drop loads that occurred longer ago than this, e.g. 90d, 36h")
    String olderThan;
    @Option(names = "--before", paramLabel = "INSTANT", description = "drop loads that occurred before this time, e.g. 2026-09-01T00:00:00Z")
    Instant before;
    @Option(names = "--keep-releases", paramLabel = "N", description = "drop the loads of all but the N latest releases of each deployment "
            + "and model") Integer keepReleases;
    @Option(names = "--dry-run", description = "say what would go, change nothing") boolean dryRun;

    @Override
    public Integer call() throws Exception {
        int given = (olderThan == null ? 0 : 1) + (before == null ? 0 : 1) + (keepReleases == null ? 0 : 1);
        if (given != 1) {
            throw common.usage("give one of --older-than DURATION, --before INSTANT or --keep-releases N");
        }
        Retention.Rule rule;
        try {
            rule = keepReleases != null ? new Retention.Rule.KeepReleases(keepReleases) : new Retention.Rule.Before(before != null ? before
                    : Instant.now().minus(Settings.of(Map.of("retention", olderThan)).duration("retention", null)));
        } catch (ConfigException e) {
            throw common.usage("--older-than '" + olderThan + "' is not a duration such as 90d, 36h or 30m");
        } catch (IllegalArgumentException e) {
            throw common.usage("--keep-releases: " + e.getMessage());
        }
        StoreConfig c = common.storeConfig();
        if (!dryRun) {
            common.reachChainTopic("prune publishes each chain's new anchor to " + c.chainTopic() + " so that store verify can tell "
                    + "retention from tampering", "");
        }
        PrintWriter out = common.out();
        PrintWriter progress = common.progress();
        progress.printf(Locale.ROOT, "%s %s%n", dryRun ? "counting" : "dropping", rule);
        Retention.Result result;
        try (AuditDatabase db = common.open(2)) {
            result = new Retention(db.dataSource(), db.dialect()).prune(rule, dryRun, progress);
            if (!dryRun) {
                List<ChainHead> anchors;
                try (Connection connection = db.dataSource().getConnection()) {
                    anchors = HashChain.anchors(connection);
                }
                Map<String, Object> producer = new LinkedHashMap<>(c.kafka());
                producer.put("acks", "all");
                producer.put("enable.idempotence", "true");
                try (var kafka = new KafkaProducer<byte[], byte[]>(producer,
                        new ByteArraySerializer(), new ByteArraySerializer())) {
                    ChainLog.publishAnchors(kafka, c.chainTopic(), c.groupId(), anchors, c.connectTimeout());
                } catch (Exception e) {
                    throw new CommandFailure("the loads were dropped, but the chains' anchors could not be published to " + c.chainTopic()
                            + " (" + e.getMessage() + "): run the same prune again to publish them", e);
                }
            }
        }
        if (common.json()) {
            common.printJson(result);
        } else {
            out.printf(Locale.ROOT, "%s %d loads (%d decisions) of %d deployments%s; %d chains now start after an anchor%s%n",
                    dryRun ? "would drop" : "dropped", result.loads(), result.decisions(), result.deployments(),
                    dryRun ? "" : ", and " + result.plans() + " plans no load names any more", result.anchors().size(),
                    dryRun ? " (dry run: nothing changed)" : ", published to " + c.chainTopic());
            if (!result.partitions().isEmpty()) {
                out.printf(Locale.ROOT, "months of load_rows dropped whole: %s%n", String.join(", ", result.partitions()));
            }
        }
        return 0;
    }
}
