package dev.placementaudit.cli;

import dev.placementaudit.testkit.EmbeddedKafkaBroker;
import dev.placementaudit.testkit.PostgresServer;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Every command that needs a broker or a database, pointed at one that is not there, run as the user types it: it
 * must return within the bound with exit code 2 and one line that names what it tried, and no stack trace.
 */
class FastFailureIT {
    /** The default bound on waiting for an unreachable service; one test keeps it, the others shorten it. */
    private static final Duration DEFAULT_WAIT = Duration.ofSeconds(10);
    /** What a JVM start and the launcher may add on top of the bound on this 2-core machine. */
    private static final Duration START_UP = Duration.ofSeconds(5);
    private static final Duration SHORT_WAIT = Duration.ofSeconds(2);

    static EmbeddedKafkaBroker broker;
    static String nobody;

    @TempDir
    Path work;
    /**
     * One class-data-sharing cache for the whole class, as a user's machine has one: each family's first command writes
     * its archive at exit (a second or two on a slow machine), the others map it. A fresh cache per test would time
     * that dump in every test instead of the failure's bound.
     */
    @TempDir
    static Path cds;

    @BeforeAll
    static void aBrokerAndAPortNobodyListensOn() throws Exception {
        broker = EmbeddedKafkaBroker.startEphemeral();
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            nobody = "127.0.0.1:" + socket.getLocalPort();
        }
    }

    @AfterAll
    static void stop() {
        broker.close();
    }

    private Launcher launcher() {
        return Launcher.of(Launcher.packagedHome(), work).withEnv(Map.of("PA_CONNECT_TIMEOUT", SHORT_WAIT.toSeconds() + "s",
                "PA_CDS_DIR", cds.toString()));
    }

    /** Exit 2, a one-line "error:" naming {@code tried}, no stack trace, within {@code bound}. */
    private static void assertFailsFast(Launcher.Run run, Duration bound, String... tried) {
        assertThat(run.exit()).as(run.toString()).isEqualTo(2);
        assertThat(run.took()).as(run.toString()).isLessThan(bound);
        String[] lines = run.err().strip().split("\n");
        assertThat(lines).as(run.toString()).hasSize(1);
        assertThat(lines[0]).startsWith("error: ").contains(tried);
        assertThat(run.err()).doesNotContain("\tat ").doesNotContain("Exception");
    }

    @Test
    void simulateGivesUpOnAnUnreachableBrokerWithinTheDefaultTenSeconds() throws Exception {
        Launcher.Run run = Launcher.of(Launcher.packagedHome(), work).run(DEFAULT_WAIT.plus(START_UP).multipliedBy(2),
                "producer", "simulate", "--deployments", "4", "--bootstrap-servers", nobody);

        assertFailsFast(run, DEFAULT_WAIT.plus(START_UP), nobody, "within 10 s");
        assertThat(run.out()).as("nothing claimed as published").isEmpty();
    }

    @Test
    void publishNamesTheBrokerAndTheBoundBeforeHashingTheFile() throws Exception {
        Launcher launcher = launcher();
        assertThat(launcher.run(Duration.ofSeconds(30), "producer", "sample-model", "--layout", "smollm2-360m-f16", "--out", "m.gguf").exit()).isZero();

        Launcher.Run run = launcher.run(Duration.ofSeconds(30), "producer", "publish", "--model", "m.gguf", "--deployment", "d", "--release", "r",
                "--bootstrap-servers", nobody);

        assertFailsFast(run, SHORT_WAIT.plus(START_UP), "no Kafka broker at " + nobody, "within 2 s");
    }

    @Test
    void publishToATopicThatDoesNotExistSaysSo() throws Exception {
        Launcher launcher = launcher();
        assertThat(launcher.run(Duration.ofSeconds(30), "producer", "sample-model", "--layout", "smollm2-360m-f16", "--out", "m.gguf").exit()).isZero();

        Launcher.Run run = launcher.run(Duration.ofSeconds(30), "producer", "publish", "--model", "m.gguf", "--deployment", "d", "--release", "r",
                "--bootstrap-servers", broker.bootstrapServers(), "--topic", "no-such-topic");

        assertFailsFast(run, SHORT_WAIT.plus(START_UP), "topic no-such-topic not found on Kafka at " + broker.bootstrapServers());
    }

    /**
     * A long-running service is the one exception: it does not give up on a broker that does not answer, but says within
     * the same bound, in one line, what it waits for (ServicesBeforeKafkaIT follows it until the broker comes).
     */
    @ParameterizedTest(name = "{0} run")
    @ValueSource(strings = {"worker", "store"})
    void aServiceRunSaysWithinSecondsThatItWaitsForAnUnreachableBroker(String service) throws Exception {
        Path log = work.resolve(service + ".log");
        Process run = launcher().withEnv(Map.of("KAFKA_BOOTSTRAP_SERVERS", nobody, "PA_WORKER_HTTP_PORT", "-1", "PA_STORE_HTTP_PORT", "-1"))
                .spawn(log, service, "run");
        try {
            await().atMost(SHORT_WAIT.plus(START_UP)).pollInterval(Duration.ofMillis(100)).until(() -> Files.exists(log)
                    && Files.readString(log).contains("no Kafka broker at " + nobody) && Files.readString(log).contains("staying up and asking again"));
            assertThat(run.isAlive()).as(Files.readString(log)).isTrue();
            assertThat(Files.readString(log)).as("one line, no stack trace").doesNotContain("Exception");
        } finally {
            run.destroy();
        }
        assertThat(run.waitFor(10, TimeUnit.SECONDS)).as("stops at once on SIGTERM while it waits").isTrue();
    }

    @Test
    void storeRunRefusesToServeItsApiBeyondLoopbackWithoutAToken() throws Exception {
        Launcher.Run run = launcher().withEnv(Map.of("KAFKA_BOOTSTRAP_SERVERS", broker.bootstrapServers(), "PA_STORE_HTTP_HOST", "0.0.0.0"))
                .run(Duration.ofSeconds(30), "store", "run");

        assertFailsFast(run, START_UP, "configuration store.http.host='0.0.0.0' is not a loopback address", "store.api.token",
                "store.api.insecure=true");
        assertThat(work.resolve("data")).as("refused before opening anything").doesNotExist();
    }

    @Test
    void storeRunGivesUpOnADatabaseThatRefusesConnections() throws Exception {
        String url = "jdbc:postgresql://" + nobody + "/audit";

        Launcher.Run run = launcher().withEnv(Map.of("KAFKA_BOOTSTRAP_SERVERS", broker.bootstrapServers(), "PA_STORE_JDBC_URL", url,
                "PA_STORE_HTTP_PORT", "-1")).run(Duration.ofSeconds(30), "store", "run");

        assertFailsFast(run, SHORT_WAIT.plus(START_UP), "cannot open the audit store at " + url, "refused");
    }

    @Test
    void rebuildGivesUpOnAnUnreachableBroker() throws Exception {
        Launcher.Run run = launcher().withEnv(Map.of("KAFKA_BOOTSTRAP_SERVERS", nobody)).run(Duration.ofSeconds(30), "store", "rebuild");

        assertFailsFast(run, SHORT_WAIT.plus(START_UP), "no Kafka broker at " + nobody);
    }

    @Test
    void whatIfGivesUpOnAnUnreachableBroker() throws Exception {
        Launcher.Run run = launcher().withEnv(Map.of("KAFKA_BOOTSTRAP_SERVERS", nobody))
                .run(Duration.ofSeconds(30), "store", "whatif", "--threshold", "1048576", "--format", "json");

        assertFailsFast(run, SHORT_WAIT.plus(START_UP), "no Kafka broker at " + nobody);
    }

    @Test
    void verifyGivesUpOnAnUnreachableBroker() throws Exception {
        Launcher.Run run = launcher().withEnv(Map.of("KAFKA_BOOTSTRAP_SERVERS", nobody)).run(Duration.ofSeconds(30), "store", "verify");

        assertFailsFast(run, SHORT_WAIT.plus(START_UP), "no Kafka broker at " + nobody, "within 2 s");
    }

    @Test
    void verifyNamesAChainTopicThatIsNotThereAndMakesNone() throws Exception {
        Launcher.Run run = launcher().withEnv(Map.of("KAFKA_BOOTSTRAP_SERVERS", broker.bootstrapServers()))
                .run(Duration.ofSeconds(30), "store", "verify", "--set", "store.chain.topic=no-such-chain");

        assertFailsFast(run, SHORT_WAIT.plus(START_UP), "topic no-such-chain not found on Kafka at " + broker.bootstrapServers());
        try (var admin = org.apache.kafka.clients.admin.Admin.create(Map.<String, Object>of("bootstrap.servers", broker.bootstrapServers()))) {
            assertThat(admin.listTopics().names().get()).as("a reader creates no topic").doesNotContain("no-such-chain");
        }
    }

    @Test
    void aQueryNeverCreatesTheStoreItLooksFor() throws Exception {
        Launcher.Run run = launcher().run(Duration.ofSeconds(30), "store", "where", "--deployment", "phone-7");

        assertFailsFast(run, START_UP, "no audit store at H2 file " + work.resolve("data/audit.mv.db"));
        assertThat(work.resolve("data")).doesNotExist();
    }

    @Test
    void aQueryNamesAStoreItCannotFind() throws Exception {
        Launcher.Run run = launcher().run(Duration.ofSeconds(30), "store", "alerts", "--store", "staging");

        assertFailsFast(run, START_UP, "no audit store 'staging'", "staging.mv.db", "conf/stores/staging.properties");
    }

    @Test
    void aQueryAgainstADatabaseWithoutAProjectionSaysSo() throws Exception {
        PostgresServer postgres = PostgresServer.fromEnvironment();
        try (TestDatabase empty = postgres.createIsolatedSchema()) {
            Launcher.Run run = launcher().run(Duration.ofSeconds(30), "store", "fleet", "--release", "r2", "--store", postgres.jdbcUrl(),
                    "--set", "store.jdbc.user=" + postgres.user(), "--set", "store.jdbc.schema=" + empty.schema());

            assertFailsFast(run, START_UP, "no audit projection in the store at " + postgres.jdbcUrl(), "table 'loads' is missing");
        }
    }

    @Test
    void aMissingConfigFileIsOneLine() throws Exception {
        Launcher.Run run = launcher().run(Duration.ofSeconds(30), "worker", "run", "--config", "missing.properties");

        assertFailsFast(run, START_UP, "configuration file missing.properties not found");
    }

    @Test
    void aNegativeLimitIsRefusedBeforeAnyQuery() throws Exception {
        Launcher.Run run = launcher().run(Duration.ofSeconds(30), "store", "alerts", "--limit", "-3");

        assertThat(run.exit()).as(run.toString()).isEqualTo(2);
        assertThat(run.err()).startsWith("error: --limit must be at least 1, got -3").doesNotContain("SELECT");
    }

    @Test
    void aMisspeltOptionIsNamedWithItsNearestMatch() throws Exception {
        Launcher.Run run = launcher().run(Duration.ofSeconds(30), "producer", "explain", "--modle", "m.gguf");

        assertThat(run.exit()).as(run.toString()).isEqualTo(2);
        assertThat(run.err()).startsWith("error: Unknown option").contains("'--modle'").contains("Possible solutions: --model");
    }

    @Test
    void aFormatIsOneOfItsValues() throws Exception {
        Launcher.Run run = launcher().run(Duration.ofSeconds(30), "store", "fleet", "--release", "r2", "--format", "xml");

        assertThat(run.exit()).as(run.toString()).isEqualTo(2);
        assertThat(run.err()).contains("expected one of [table, json]");
    }

    @Test
    void aGateThatCannotReadTheStoreExitsTwoNotOneOrZero() throws Exception {
        // A pipeline must tell "the release is blocked" (1) from "the gate could not decide" (2).
        Launcher.Run run = launcher().run(Duration.ofSeconds(30), "store", "gate", "--release", "r2", "--store", "staging", "--format", "junit");

        assertFailsFast(run, START_UP, "no audit store 'staging'");
        assertThat(run.out()).as("no JUnit report that could pass for a verdict").isEmpty();
    }

    @Test
    void aGateBoundIsAPercentage() throws Exception {
        Launcher.Run run = launcher().run(Duration.ofSeconds(30), "store", "gate", "--release", "r2", "--max-exposure", "150");

        assertThat(run.exit()).as(run.toString()).isEqualTo(2);
        assertThat(run.err()).startsWith("error: --max-exposure must be between 0 and 100, got 150.0");
    }

    @Test
    void junitIsTheGatesFormatOnly() throws Exception {
        Launcher.Run run = launcher().run(Duration.ofSeconds(30), "store", "fleet", "--release", "r2", "--format", "junit");

        assertThat(run.exit()).as(run.toString()).isEqualTo(2);
        assertThat(run.err()).contains("expected one of [table, json]");
    }

    @Test
    void aDirectoryAsAModelSaysSo() throws Exception {
        Files.createDirectories(work.resolve("models"));

        Launcher.Run run = launcher().run(Duration.ofSeconds(30), "producer", "explain", "--model", "models");

        assertFailsFast(run, START_UP, "models is a directory, not a model file");
    }

    @Test
    void verboseAddsTheStackTrace() throws Exception {
        Launcher.Run run = launcher().run(Duration.ofSeconds(30), "store", "where", "--store", "staging", "--verbose");

        assertThat(run.exit()).as(run.toString()).isEqualTo(2);
        assertThat(run.err()).startsWith("error: no audit store 'staging'").contains("\tat dev.placementaudit.");
    }
}
