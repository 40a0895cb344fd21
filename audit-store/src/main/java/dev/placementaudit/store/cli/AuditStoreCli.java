package dev.placementaudit.store.cli;

import dev.placementaudit.core.format.TensorEncodings;
import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.service.ConfigException;
import dev.placementaudit.service.Settings;
import dev.placementaudit.service.cli.CliErrors;
import dev.placementaudit.service.cli.CommandFailure;
import dev.placementaudit.service.cli.ConfDir;
import dev.placementaudit.service.cli.KafkaReachability;
import dev.placementaudit.service.cli.ProjectVersion;
import dev.placementaudit.store.AuditStore;
import dev.placementaudit.store.chain.ChainHead;
import dev.placementaudit.store.chain.ChainLog;
import dev.placementaudit.store.chain.ChainVerifier;
import dev.placementaudit.store.chain.HashChain;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.ingest.IngestLoop;
import dev.placementaudit.store.query.AuditQueries;
import dev.placementaudit.store.regression.Finding;
import dev.placementaudit.store.regression.RootCauses;
import dev.placementaudit.store.replay.ProjectionRebuild;
import dev.placementaudit.store.replay.WhatIf;
import dev.placementaudit.store.retention.Retention;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.BiConsumer;
import java.util.stream.Collectors;

/** {@code store run|where|diff|fleet|alerts|budget|rebuild|whatif}. */
@Command(name = "store", mixinStandardHelpOptions = true, versionProvider = ProjectVersion.class,
        description = "Where every tensor of every model load landed, release after release.",
        subcommands = {AuditStoreCli.Run.class, AuditStoreCli.Where.class, AuditStoreCli.Diff.class, AuditStoreCli.Fleet.class,
                AuditStoreCli.Alerts.class, AuditStoreCli.Budget.class, AuditStoreCli.Rebuild.class, AuditStoreCli.WhatIfCommand.class,
                AuditStoreCli.Verify.class, AuditStoreCli.Prune.class})
public final class AuditStoreCli {
    /**
     * JSON output, made on first use: building an ObjectMapper costs about 0.3 s of a cold JVM, which every command
     * that prints no JSON (and {@code store run}, restarting after a crash) would pay at start.
     */
    private static final class Json {
        static final ObjectMapper MAPPER = new ObjectMapper().registerModule(new JavaTimeModule())
                .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS).enable(SerializationFeature.INDENT_OUTPUT);
    }

    public static void main(String[] args) {
        AvroTrust.install();
        System.exit(commandLine().execute(args));
    }

    @Option(names = CliErrors.VERBOSE, scope = CommandLine.ScopeType.INHERIT, description = "print the stack trace of a failure")
    boolean verbose;

    public static CommandLine commandLine() {
        return CliErrors.install(new CommandLine(new AuditStoreCli()));
    }

    /** How query results are printed. */
    enum OutputFormat { table, json }

    /** Where the store's configuration comes from; every query command opens the database itself. */
    static final class Common {
        @Option(names = "--store", paramLabel = "STORE", description = "the audit store to use: a JDBC URL, an H2 database file (./data/audit or "
                + "./data/audit.mv.db), or NAME for conf/stores/NAME.properties (default: store.jdbc.url, env PA_STORE_JDBC_URL, else "
                + StoreConfig.DEFAULT_H2_PATH + ")")
        String store;

        @Option(names = "--config", paramLabel = "FILE", description = "properties file (store.*, kafka.*, connect.timeout); env PA_* and -D "
                + "override it (default: conf/store.properties of the distribution, or of $PA_CONF_DIR)")
        Path config;

        @Option(names = "--set", paramLabel = "KEY=VALUE", description = "a setting that wins over every other layer, e.g. --set connect.timeout=3s (repeatable)")
        Map<String, String> overrides = new LinkedHashMap<>();

        @Option(names = "--format", defaultValue = "table", description = "output: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE})")
        OutputFormat format;

        private StoreConfig storeConfig;

        StoreConfig storeConfig() {
            if (storeConfig == null) {
                Map<String, String> layers = new LinkedHashMap<>();
                if (store != null) {
                    layers.putAll(StoreLocation.settings(store));
                }
                layers.putAll(overrides);
                storeConfig = StoreConfig.from(Settings.load(ConfDir.orDefault(config, "store.properties"), layers));
            }
            return storeConfig;
        }

        /** The store as it is: a query never creates a database, a schema or a table. */
        AuditDatabase open() {
            StoreConfig c = storeConfig();
            return AuditDatabase.openExisting(c.jdbcUrl(), c.jdbcUser(), c.jdbcPassword(), c.jdbcSchema(), 2, c.connectTimeout());
        }

        AuditQueries queries(AuditDatabase database) {
            StoreConfig c = storeConfig();
            return new AuditQueries(database.dataSource(), c.offHeapGrowth(), c.heapGrowth());
        }

        boolean json() {
            return format == OutputFormat.json;
        }

        /**
         * Fails in one line unless a broker is configured and answers with the chain topic there.
         *
         * @param why       what the command needs the topic for
         * @param otherwise what the user can do instead, appended to the advice (or "")
         */
        StoreConfig reachChainTopic(String why, String otherwise) {
            StoreConfig c = storeConfig();
            if (!c.hasKafka()) {
                throw new CommandFailure(why + ", and no broker is configured: set KAFKA_BOOTSTRAP_SERVERS (or kafka.bootstrap.servers)" + otherwise);
            }
            KafkaReachability.check(c.kafka(), c.connectTimeout(), List.of(c.chainTopic()));
            return c;
        }

        void printJson(PrintWriter out, Object result) throws IOException {
            out.println(Json.MAPPER.writeValueAsString(result));
        }

        /** Opens the database, runs the query, and prints the result as JSON or, by default, with {@code table}. */
        <T> int show(PrintWriter out, Query<T> query, BiConsumer<PrintWriter, T> table) throws Exception {
            try (AuditDatabase db = open()) {
                T result = query.run(db);
                if (json()) {
                    printJson(out, result);
                } else {
                    table.accept(out, result);
                }
                return 0;
            }
        }
    }

    @FunctionalInterface
    interface Query<T> {
        T run(AuditDatabase db) throws Exception;
    }

    @Command(name = "run", mixinStandardHelpOptions = true, description = "Ingest decisions into the database and serve the API. Stops on SIGTERM.")
    static final class Run implements Callable<Integer> {
        @Mixin
        Common common = new Common();

        @Override
        public Integer call() throws InterruptedException {
            StoreConfig config = common.storeConfig();
            AuditStore store = AuditStore.start(config, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
            Runtime.getRuntime().addShutdownHook(new Thread(store::close, "audit-store-shutdown"));
            while (!store.awaitTermination(Duration.ofSeconds(1))) {
                // waiting for SIGTERM or a fatal error
            }
            return store.state() == IngestLoop.State.FAILED ? 1 : 0;
        }
    }

    @Command(name = "where", mixinStandardHelpOptions = true, description = "Where every tensor landed: a deployment's loads, or one load in full.")
    static final class Where implements Callable<Integer> {
        @Mixin
        Common common = new Common();
        @Option(names = "--deployment", description = "only this deployment's loads")
        String deployment;
        @Option(names = "--model", description = "only loads of this model id")
        String model;
        @Option(names = "--release", description = "only loads of this release")
        String release;
        @Option(names = "--load", description = "one load id: every tensor, its domain and reason")
        String load;
        @Option(names = "--limit", defaultValue = "20", description = "most loads to list, newest first (default: ${DEFAULT-VALUE})")
        int limit;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            PrintWriter out = spec.commandLine().getOut();
            requirePositive(spec, "--limit", limit);
            if (load != null) {
                return common.show(out, db -> common.queries(db).load(load).orElseThrow(() -> new IllegalArgumentException("no load " + load)),
                        (o, detail) -> {
                            var l = detail.load();
                            o.printf(Locale.ROOT, "%s  %s %s  %s  %d tensors  heap %s  off-heap %s  mapped %s%n", l.loadId(), l.deploymentId(),
                                    l.release(), l.modelId(), l.tensorCount(), ByteSizes.format(l.heapBytes()), ByteSizes.format(l.offHeapBytes()),
                                    ByteSizes.format(l.mappedBytes()));
                            detail.tensors().forEach(t -> o.printf(Locale.ROOT, "  %-40s %-13s %10s  %-20s %s%s%n", t.name(), t.domain(),
                                    ByteSizes.format(t.residentBytes()), t.reasonCode(), t.residentFormat(),
                                    t.sizeEstimated() ? "  size estimated (unknown type)" : ""));
                            long estimated = detail.tensors().stream().filter(AuditQueries.TensorRow::sizeEstimated).count();
                            if (estimated > 0) {
                                o.printf(Locale.ROOT, "  %d of %d tensors have an estimated size: the producer did not know their type%n",
                                        estimated, detail.tensors().size());
                            }
                        });
            }
            return common.show(out, db -> common.queries(db).loads(deployment, model, release, limit), (o, loads) -> {
                o.printf(Locale.ROOT, "%-36s %-16s %-10s %-20s %-8s %10s %10s %10s%n", "load", "deployment", "release", "model", "complete",
                        "heap", "off-heap", "mapped");
                loads.forEach(l -> o.printf(Locale.ROOT, "%-36s %-16s %-10s %-20s %-8s %10s %10s %10s%n", l.loadId(), l.deploymentId(),
                        l.release(), l.modelId(), completeness(l), ByteSizes.format(l.heapBytes()), ByteSizes.format(l.offHeapBytes()),
                        ByteSizes.format(l.mappedBytes())));
            });
        }
    }

    @Command(name = "diff", mixinStandardHelpOptions = true, description = "Compare two releases of a deployment's model, tensor by tensor.")
    static final class Diff implements Callable<Integer> {
        @Mixin
        Common common = new Common();
        @Option(names = "--deployment", required = true, description = "the deployment")
        String deployment;
        @Option(names = "--model", required = true, description = "the model id, e.g. llama-3.2-1b-q4km")
        String model;
        @Option(names = "--from", required = true, description = "the earlier release")
        String from;
        @Option(names = "--to", required = true, description = "the later release")
        String to;
        @Option(names = "--tensors", paramLabel = "N", defaultValue = "5", description = "tensors to list under each root cause, largest "
                + "change first (default: ${DEFAULT-VALUE})")
        int tensors;
        @Option(names = "--findings", description = "also list every tensor's findings with both decisions' reasons")
        boolean findings;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            PrintWriter out = spec.commandLine().getOut();
            if (tensors < 0) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--tensors must be 0 or more, got " + tensors);
            }
            return common.show(out, db -> common.queries(db).diff(deployment, model, from, to).orElseThrow(() ->
                    new IllegalArgumentException("no complete load of " + model + " on " + deployment + " for " + from + " and " + to)), (o, report) -> {
                o.printf(Locale.ROOT, "%s %s: %s -> %s  off-heap %s -> %s  heap %s -> %s  mapped %s -> %s%n", deployment, model, from, to,
                        ByteSizes.format(report.from().offHeapBytes()), ByteSizes.format(report.to().offHeapBytes()),
                        ByteSizes.format(report.from().heapBytes()), ByteSizes.format(report.to().heapBytes()),
                        ByteSizes.format(report.from().mappedBytes()), ByteSizes.format(report.to().mappedBytes()));
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
    }

    @Command(name = "fleet", mixinStandardHelpOptions = true, description = "One release across the fleet: totals, regressions, drift.")
    static final class Fleet implements Callable<Integer> {
        @Mixin
        Common common = new Common();
        @Option(names = "--release", required = true, description = "the release to look at across the fleet")
        String release;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            PrintWriter out = spec.commandLine().getOut();
            return common.show(out, db -> common.queries(db).fleet(release), (o, report) -> {
                o.printf(Locale.ROOT, "release %s: %d deployments  heap %s  off-heap %s  mapped %s%n", release, report.deployments(),
                        ByteSizes.format(report.heapBytes()), ByteSizes.format(report.offHeapBytes()), ByteSizes.format(report.mappedBytes()));
                o.println("  with regressions: " + report.withRegressions());
                o.println("  drifting from the fleet: " + report.drifting());
                report.rows().forEach(r -> o.printf(Locale.ROOT, "  %-16s %-20s %-8s %-8s off-heap %10s  mapped %10s  regressions %d%s%n",
                        r.deploymentId(), r.modelId(), r.platform(), r.profile(), ByteSizes.format(r.offHeapBytes()),
                        ByteSizes.format(r.mappedBytes()), r.regressions(), r.driftsFromFleet() ? "  DRIFT" : ""));
            });
        }
    }

    @Command(name = "alerts", mixinStandardHelpOptions = true, description = "Alerts raised, newest first (suppressed ones say by what).")
    static final class Alerts implements Callable<Integer> {
        @Mixin
        Common common = new Common();
        @Option(names = "--deployment", description = "only this deployment's alerts")
        String deployment;
        @Option(names = "--limit", defaultValue = "20", description = "most alerts to list, newest first (default: ${DEFAULT-VALUE})")
        int limit;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            PrintWriter out = spec.commandLine().getOut();
            requirePositive(spec, "--limit", limit);
            return common.show(out, db -> common.queries(db).alerts(deployment, limit), (o, alerts) -> {
                for (AuditQueries.AlertRow a : alerts) {
                    o.printf(Locale.ROOT, "%s %-15s %-16s %s %s -> %s  %s%s (%s)%s%n", a.detectedAt(), a.kind(), a.deploymentId(), a.modelId(),
                            a.fromRelease(), a.toRelease(), a.deltaBytes() >= 0 ? "+" : "-", ByteSizes.format(Math.abs(a.deltaBytes())), a.rule(),
                            a.suppressedBy() == null ? "" : "  [suppressed: " + a.suppressedBy() + "]");
                    o.printf(Locale.ROOT, "    loads %s -> %s%n", a.fromLoadId(), a.toLoadId());
                    a.causes().forEach(cause -> o.println("    why: " + cause.cause()));
                    if (!a.topTensors().isEmpty()) {
                        o.println("    top: " + a.topTensors().stream().map(t -> t.name() + " " + t.placement()).collect(Collectors.joining("; ")));
                    }
                }
                if (alerts.size() == limit) {
                    o.printf(Locale.ROOT, "(the newest %d; --limit N for more)%n", limit);
                }
            });
        }
    }

    @Command(name = "rebuild", mixinStandardHelpOptions = true,
            description = "Rebuild the projection from the decision log into <schema>_rebuild, prove it equal to the live one, "
                    + "and (with --swap) make it live. Interrupt and rerun at will: it resumes.")
    static final class Rebuild implements Callable<Integer> {
        @Mixin
        Common common = new Common();
        @Option(names = "--swap", description = "replace the live projection once proven equal")
        boolean swap;
        @Option(names = "--force", description = "swap even if different (after a deliberate change to the projection)")
        boolean force;
        @Option(names = "--stop-after", paramLabel = "N", defaultValue = "9223372036854775807", description = "replay at most N records this run (default: all)")
        long stopAfter;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            requirePositive(spec, "--stop-after", stopAfter);
            // With --format json, stdout carries only the result; the progress goes to stderr.
            PrintWriter progress = common.json() ? spec.commandLine().getErr() : spec.commandLine().getOut();
            var result = new ProjectionRebuild(common.storeConfig(), progress).run(stopAfter, swap, force);
            if (common.json()) {
                common.printJson(spec.commandLine().getOut(), result);
            }
            return result.equal() || result.swapped() ? 0 : 3;
        }
    }

    @Command(name = "verify", mixinStandardHelpOptions = true,
            description = "Recompute the tamper-evident hash chains from the rows as they are now, and check them against the heads "
                    + "the store published to Kafka. Names every broken link; exit 1 if there is one, 0 if every chain holds.")
    static final class Verify implements Callable<Integer> {
        @Mixin
        Common common = new Common();
        @Option(names = "--deployment", paramLabel = "ID", description = "verify one deployment's chain (default: every deployment)")
        String deployment;
        @Option(names = "--no-log", description = "check the database alone, without the published heads: a store rewritten together "
                + "with its hashes then goes unnoticed")
        boolean noLog;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            StoreConfig c = common.storeConfig();
            Optional<ChainLog.Published> heads = Optional.empty();
            if (!noLog) {
                common.reachChainTopic("verify checks the chains against the heads published to Kafka", ", or pass --no-log to check the database alone");
                heads = Optional.of(ChainLog.read(c.kafka(), c.chainTopic(), c.groupId(), c.connectTimeout()));
            }
            ChainVerifier.Report report;
            try (AuditDatabase db = common.open(); Connection connection = db.dataSource().getConnection()) {
                report = ChainVerifier.verify(connection, Optional.ofNullable(deployment), heads);
            }
            PrintWriter out = spec.commandLine().getOut();
            if (common.json()) {
                common.printJson(out, report);
            } else {
                report.breaks().forEach(b -> out.printf(Locale.ROOT, "BROKEN  %s  entry %s  load %s: %s%n", b.deploymentId(),
                        b.seq() == 0 ? "-" : Long.toString(b.seq()), b.loadId(), b.what()));
                Set<String> broken = new HashSet<>();
                report.breaks().forEach(b -> broken.add(b.deploymentId()));
                report.chains().stream().filter(chain -> !broken.contains(chain.deploymentId())).forEach(chain -> out.printf(Locale.ROOT,
                        "ok      %s  %d entries, head %s%s%n", chain.deploymentId(), chain.entries(), chain.head().substring(0, 12),
                        chain.publishedHeadChecked() ? ", as published" : ""));
                heads.map(ChainLog.Published::otherProjections).filter(others -> !others.isEmpty()).ifPresent(others -> out.printf(Locale.ROOT,
                        "note: %s also holds the heads of other projections %s; only this projection's (%s) were read%n", c.chainTopic(),
                        others, c.groupId()));
                out.printf(Locale.ROOT, "%d deployments, %d chained loads%s: %s%n", report.chains().size(), report.entries(),
                        report.checkedAgainstLog() ? ", checked against " + c.chainTopic() : ", database only (--no-log)",
                        report.intact() ? "every chain holds" : report.breaks().size() + " broken links in " + broken.size() + " deployments");
            }
            return report.intact() ? 0 : 1;
        }
    }

    @Command(name = "prune", mixinStandardHelpOptions = true,
            description = "Drop old loads from the projection (decisions, findings, alerts and all): those before a cutoff, or of all but "
                    + "the latest N releases; keeping "
                    + "each deployment and model's latest load and the one it was compared with. The decision log keeps them: rebuild "
                    + "brings them back. The hash chain is cut at its start, and its new anchor published to the chain topic.")
    static final class Prune implements Callable<Integer> {
        @Mixin
        Common common = new Common();
        @Option(names = "--older-than", paramLabel = "DURATION", description = "drop loads that occurred longer ago than this, e.g. 90d, 36h")
        String olderThan;
        @Option(names = "--before", paramLabel = "INSTANT", description = "drop loads that occurred before this time, e.g. 2026-09-01T00:00:00Z")
        Instant before;
        @Option(names = "--keep-releases", paramLabel = "N", description = "drop the loads of all but the N latest releases of each deployment "
                + "and model")
        Integer keepReleases;
        @Option(names = "--dry-run", description = "say what would go, change nothing")
        boolean dryRun;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            int given = (olderThan == null ? 0 : 1) + (before == null ? 0 : 1) + (keepReleases == null ? 0 : 1);
            if (given != 1) {
                throw new CommandLine.ParameterException(spec.commandLine(), "give one of --older-than DURATION, --before INSTANT or --keep-releases N");
            }
            Retention.Rule rule;
            try {
                rule = keepReleases != null ? new Retention.Rule.KeepReleases(keepReleases) : new Retention.Rule.Before(before != null ? before
                        : Instant.now().minus(Settings.of(Map.of("retention", olderThan)).duration("retention", null)));
            } catch (ConfigException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--older-than '" + olderThan + "' is not a duration such as 90d, 36h or 30m");
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--keep-releases: " + e.getMessage());
            }
            StoreConfig c = common.storeConfig();
            if (!dryRun) {
                common.reachChainTopic("prune publishes each chain's new anchor to " + c.chainTopic() + " so that store verify can tell "
                        + "retention from tampering", "");
            }
            PrintWriter out = spec.commandLine().getOut();
            PrintWriter progress = common.json() ? spec.commandLine().getErr() : out;
            progress.printf(Locale.ROOT, "%s %s%n", dryRun ? "counting" : "dropping", rule);
            Retention.Result result;
            try (AuditDatabase db = common.open()) {
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
                common.printJson(out, result);
            } else {
                out.printf(Locale.ROOT, "%s %d loads (%d decisions) of %d deployments%s; %d chains now start after an anchor%s%n",
                        dryRun ? "would drop" : "dropped", result.loads(), result.decisions(), result.deployments(),
                        dryRun ? "" : ", and " + result.plans() + " plans no load names any more", result.anchors().size(),
                        dryRun ? " (dry run: nothing changed)" : ", published to " + c.chainTopic());
            }
            return 0;
        }
    }

    @Command(name = "whatif", mixinStandardHelpOptions = true,
            description = "Re-resolve historical model loads under a candidate policy and report what would move. Writes nothing.")
    static final class WhatIfCommand implements Callable<Integer> {
        @Mixin
        Common common = new Common();
        @Option(names = "--loads-topic", defaultValue = "model-loads", description = "the topic of recorded model loads (default: ${DEFAULT-VALUE})")
        String loadsTopic;
        @Option(names = "--from", defaultValue = "1970-01-01T00:00:00Z", description = "ISO instant (default: the beginning)")
        Instant from;
        @Option(names = "--to", description = "ISO instant (default: now)")
        Instant to;
        @Option(names = "--deployment", description = "only this deployment's loads")
        String deployment;
        @Option(names = "--model", description = "only loads of this model id")
        String model;
        @Option(names = "--threshold", description = "candidate off-heap threshold in bytes")
        Long threshold;
        @Option(names = "--servable", split = ",", description = "candidate mapped-servable encodings, e.g. Q4_K,Q6_K,Dense(4B)")
        List<String> servable;
        @Option(names = "--offheap", description = "candidate off-heap support (true/false)")
        Boolean offHeap;
        @Option(names = "--mapped-files", description = "candidate file mapping support (true/false)")
        Boolean mappedFiles;
        @Option(names = "--tensors", defaultValue = "20", description = "tensor changes to list in the table (default: ${DEFAULT-VALUE})")
        int tensors;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            PrintWriter out = spec.commandLine().getOut();
            requirePositive(spec, "--tensors", tensors);
            StoreConfig config = common.storeConfig();
            KafkaReachability.check(config.kafka(), config.connectTimeout(), List.of(loadsTopic));
            return common.show(out, db -> new WhatIf(db.dataSource(), config.kafka(), loadsTopic,
                    config.connectTimeout()).run(query()),
                    (o, report) -> {
                        o.println(report.summary());
                        report.deployments().forEach(d -> o.printf(Locale.ROOT, "  %-16s %4d loads  %6d unchanged  %6d changed  %6d new  %s%n",
                                d.deploymentId(), d.loads(), d.unchanged(), d.changed(), d.added(), d.deltaByDomain()));
                        report.changes().stream().limit(tensors).forEach(t -> o.printf(Locale.ROOT, "  %-9s %-16s %-32s %s -> %s  %s%n",
                                t.change(), t.deploymentId(), t.tensorName(), t.beforeDomain(), t.afterDomain(), ByteSizes.format(t.residentBytes())));
                    });
        }

        WhatIf.Query query() {
            return new WhatIf.Query(from, to == null ? Instant.now() : to, deployment, model,
                    new WhatIf.CandidatePolicy(
                            threshold == null ? OptionalLong.empty() : OptionalLong.of(threshold),
                            servable == null ? Optional.empty() : Optional.of(servable.stream()
                                    .map(TensorEncodings::parseKnown).collect(Collectors.toSet())),
                            Optional.ofNullable(offHeap), Optional.ofNullable(mappedFiles)));
        }
    }

    @Command(name = "budget", mixinStandardHelpOptions = true,
            description = "Declare the growth a deployment's release is expected to bring; within it no alert is raised.")
    static final class Budget implements Callable<Integer> {
        @Mixin
        Common common = new Common();
        @Option(names = "--deployment", required = true, description = "the deployment the budget is for")
        String deployment;
        @Option(names = "--release", required = true, description = "the release expected to grow")
        String release;
        @Option(names = "--kind", defaultValue = "OFFHEAP_GROWTH", description = "${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE})")
        BudgetKind kind;
        @Option(names = "--max-delta-bytes", description = "allowed growth; omit to acknowledge any growth")
        Long maxDelta;
        @Option(names = "--note", required = true, description = "why, e.g. a ticket")
        String note;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

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
            spec.commandLine().getOut().printf(Locale.ROOT, "%s on %s %s: %s (%s)%n", kind, deployment, release,
                    maxDelta == null ? "acknowledged" : "budget " + ByteSizes.format(maxDelta), note);
            return 0;
        }
    }

    /** The kinds of growth a budget can cover. */
    enum BudgetKind { OFFHEAP_GROWTH, HEAP_GROWTH, LOST_MAPPING }

    /**
     * true or false, and how many of its records were dead-lettered: a load missing one of them never completes, and a
     * complete one may still have had a record set aside (a decision sent twice, one the database refused), which an
     * auditor must see as the API shows it.
     */
    static String completeness(AuditQueries.LoadSummary load) {
        String dead = load.deadLetteredRecords() > 0 ? "dlq:" + load.deadLetteredRecords() : null;
        return load.complete() ? dead == null ? "true" : "true," + dead : dead == null ? "false" : dead;
    }

    static void requirePositive(CommandLine.Model.CommandSpec spec, String option, long value) {
        if (value < 1) {
            throw new CommandLine.ParameterException(spec.commandLine(), option + " must be at least 1, got " + value);
        }
    }
}
