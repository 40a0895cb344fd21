package dev.placementaudit.store.cli;

import dev.placementaudit.schemas.AvroTrust;
import dev.placementaudit.service.Settings;
import dev.placementaudit.service.cli.CommandFailure;
import dev.placementaudit.service.cli.ConfDir;
import dev.placementaudit.service.cli.KafkaReachability;
import dev.placementaudit.service.cli.ProjectVersion;
import dev.placementaudit.service.cli.Subcommands;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.query.AuditQueries;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import dev.placementaudit.store.query.LoadQueries;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiConsumer;

/** {@code store run|where|diff|fleet|alerts|budget|rebuild|whatif}. */
@Command(name = "store", mixinStandardHelpOptions = true, versionProvider = ProjectVersion.class,
        description = "Where every tensor of every model load landed, release after release.")
public final class AuditStoreCli {
    /**
     * JSON output, made on first use: building an ObjectMapper costs about 0.3 s of a cold JVM, which every command
     * that prints no JSON (and {@code store run}, restarting after a crash) would pay at start.
     */
    private static final class Json {
        static final ObjectMapper MAPPER = new ObjectMapper().registerModule(new JavaTimeModule())
                .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS).enable(SerializationFeature.INDENT_OUTPUT);
    }

    private static final Subcommands SUBCOMMANDS = new Subcommands().with("run", RunCommand::new).with("where", WhereCommand::new)
            .with("diff", DiffCommand::new).with("fleet", FleetCommand::new).with("alerts", AlertsCommand::new)
            .with("budget", BudgetCommand::new).with("rebuild", RebuildCommand::new).with("whatif", WhatIfCommand::new)
            .with("verify", VerifyCommand::new).with("prune", PruneCommand::new).with("incidents", IncidentsCommand::new)
            .with("incident", IncidentCommand::new).with("ack", AckCommand::new).with("gate", GateCommand::new);

    public static void main(String[] args) {
        AvroTrust.install();
        System.exit(commandLine(Subcommands.named(args)).execute(args));
    }

    /** With only the named subcommand when it is one (see {@link Subcommands}); null for every one, what {@code --help} lists. */
    public static CommandLine commandLine(String named) {
        return SUBCOMMANDS.commandLine(new AuditStoreCli(), named);
    }

    /** How query results are printed. */
    enum OutputFormat { table, json }

    /**
     * Where the store's configuration comes from; every query command opens the database itself. Without {@code --format}:
     * for a command whose formats are not a query's (the gate's JUnit report); {@link Common} adds it.
     */
    static class StoreOptions {
        @Option(names = "--store", paramLabel = "STORE", description = "the audit store to use: a JDBC URL, an H2 database file (./data/audit or "
                + "./data/audit.mv.db), or NAME for conf/stores/NAME.properties (default: store.jdbc.url, env PA_STORE_JDBC_URL, else "
                + StoreConfig.DEFAULT_H2_PATH + ")") String store;

        @Option(names = "--config", paramLabel = "FILE", description = "properties file (store.*, kafka.*, connect.timeout); env PA_* and -D "
                + "override it (default: conf/store.properties of the distribution, or of $PA_CONF_DIR)") Path config;

        @Option(names = "--set", paramLabel = "KEY=VALUE", description = "a setting that wins over every other layer, e.g. --set connect.timeout=3s (repeatable)")
        Map<String, String> overrides = new LinkedHashMap<>();

        /** The command this mixin is part of: where its output goes, and whom a usage error names. */
        @Spec(Spec.Target.MIXEE) CommandSpec spec;

        private StoreConfig storeConfig;

        PrintWriter out() {
            return spec.commandLine().getOut();
        }

        /** A usage error, reported as picocli reports its own (the message, then the command's usage). */
        ParameterException usage(String message) {
            return new ParameterException(spec.commandLine(), message);
        }

        void requirePositive(String option, long value) {
            AuditStoreCli.requirePositive(spec, option, value);
        }

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
            return open(0);
        }

        /** The same, with a pool of {@code size} connections: for work that opens many (prune); 0 for none (a query). */
        AuditDatabase open(int size) {
            StoreConfig c = storeConfig();
            return AuditDatabase.openExisting(c.jdbcUrl(), c.jdbcUser(), c.jdbcPassword(), c.jdbcSchema(), size, c.connectTimeout());
        }

        AuditQueries queries(AuditDatabase database) {
            StoreConfig c = storeConfig();
            return new AuditQueries(database.dataSource(), c.offHeapGrowth(), c.heapGrowth());
        }

        /**
         * Fails in one line unless a broker is configured and answers with the chain topic there.
         *
         * @param why       what the command needs the topic for
         * @param otherwise what the user can do instead, appended to the advice (or "")
         */
        StoreConfig reachChainTopic(String why, String otherwise) {
            StoreConfig c = requireKafka(why, otherwise);
            KafkaReachability.check(c.kafka(), c.connectTimeout(), List.of(c.chainTopic()));
            return c;
        }

        /** Fails in one line unless a broker is configured (whether it answers is the caller's to find out, within the bound). */
        StoreConfig requireKafka(String why, String otherwise) {
            StoreConfig c = storeConfig();
            if (!c.hasKafka()) {
                throw new CommandFailure(why + ", and no broker is configured: set KAFKA_BOOTSTRAP_SERVERS (or kafka.bootstrap.servers)" + otherwise);
            }
            return c;
        }

        /** The result as JSON on stdout. */
        void printJson(Object result) throws IOException {
            out().println(Json.MAPPER.writeValueAsString(result));
        }
    }

    /** {@link StoreOptions} and {@code --format table|json}: every query command's options. */
    static final class Common extends StoreOptions {
        @Option(names = "--format", defaultValue = "table", description = "output: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE})")
        OutputFormat format;

        boolean json() {
            return format == OutputFormat.json;
        }

        /** Where progress goes: stdout, except with {@code --format json}, whose stdout carries only the result. */
        PrintWriter progress() {
            return json() ? spec.commandLine().getErr() : out();
        }

        /** Opens the database, runs the query, and prints the result as JSON or, by default, with {@code table}. */
        <T> int show(Query<T> query, BiConsumer<PrintWriter, T> table) throws Exception {
            try (AuditDatabase db = open()) {
                T result = query.run(db);
                if (json()) {
                    printJson(result);
                } else {
                    table.accept(out(), result);
                }
                return 0;
            }
        }
    }

    /** {@code --deployment} and {@code --model}, each narrowing the loads a command reads; both optional. */
    static final class LoadFilter {
        @Option(names = "--deployment", description = "only this deployment's loads") String deployment;

        @Option(names = "--model", description = "only loads of this model id") String model;
    }

    /** {@code --limit N}: how many rows a listing shows, newest first. */
    static final class Limit {
        @Option(names = "--limit", paramLabel = "N", defaultValue = "20", description = "most to list, newest first (default: ${DEFAULT-VALUE})")
        int limit;

        @Spec(Spec.Target.MIXEE) CommandSpec spec;

        /** The limit, once checked to be 1 or more. */
        int value() {
            requirePositive(spec, "--limit", limit);
            return limit;
        }

        /** After a listing that the limit cut short: how to see more. */
        void sayIfCut(PrintWriter out, int shown) {
            if (shown == limit) {
                out.printf(Locale.ROOT, "(the newest %d; --limit N for more)%n", limit);
            }
        }
    }

    /** A usage error unless {@code value} is 1 or more, naming the option, as picocli reports its own. */
    static void requirePositive(CommandSpec spec, String option, long value) {
        if (value < 1) {
            throw new ParameterException(spec.commandLine(), option + " must be at least 1, got " + value);
        }
    }

    @FunctionalInterface
    interface Query<T> {
        T run(AuditDatabase db) throws Exception;
    }

    /** The kinds of growth a budget can cover. */
    enum BudgetKind { OFFHEAP_GROWTH, HEAP_GROWTH, LOST_MAPPING }

    /**
     * true or false, and how many of its records were dead-lettered: a load missing one of them never completes, and a
     * complete one may still have had a record set aside (a decision sent twice, one the database refused), which an
     * auditor must see as the API shows it.
     */
    static String completeness(LoadQueries.LoadSummary load) {
        String dead = load.deadLetteredRecords() > 0 ? "dlq:" + load.deadLetteredRecords() : null;
        return load.complete() ? dead == null ? "true" : "true," + dead : dead == null ? "false" : dead;
    }
}
