package dev.placementaudit.store;

import dev.placementaudit.collector.Collector;
import dev.placementaudit.collector.CollectorConfig;
import dev.placementaudit.collector.Tokens;
import dev.placementaudit.producer.cli.ProducerCli;
import dev.placementaudit.service.Settings;
import dev.placementaudit.testkit.EmbeddedKafkaBroker;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.SelfSignedKeystore;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code producer load --collector} as a device's operator types it (issue 56): a set-up mistake (a certificate this JVM
 * does not trust, {@code http://} against the HTTPS port, a wrong token) is one line with its cause, exit code 2, and
 * nothing spooled, since no retry can fix it; being offline is what the spool is for.
 */
@ExtendWith(KafkaBrokerExtension.class)
class CollectorSetUpMistakesTest {
    private static final String TOKEN = "fleet-phones-token";

    @TempDir
    Path dir;

    private record Run(int exit, String out, String err) {
    }

    private Run load(String url, String token, String... more) throws Exception {
        Path model = dir.resolve("m.gguf");
        if (!Files.exists(model)) {
            assertThat(cli("sample-model", "--layout", "llama-3.2-1b-q4km", "--out", model.toString()).exit()).isZero();
        }
        Path tokenFile = Files.writeString(dir.resolve("token-" + token.hashCode()), token);
        String[] args = Stream.concat(Stream.of("load", "--model", model.toString(), "--profile", "edge", "--platform", "android",
                "--deployment", "android-1", "--release", "r1", "--collector", url, "--token-file", tokenFile.toString(), "--spool",
                dir.resolve("spool").toString()), Stream.of(more)).toArray(String[]::new);
        return cli(args);
    }

    private static Run cli(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = ProducerCli.commandLine(null);
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        return new Run(cli.execute(args), out.toString(), err.toString());
    }

    private long spooled() throws Exception {
        Path spool = dir.resolve("spool");
        if (!Files.isDirectory(spool)) {
            return 0;
        }
        try (Stream<Path> files = Files.list(spool)) {
            return files.filter(f -> f.getFileName().toString().endsWith(".gz")).count();
        }
    }

    @Test
    void aSetUpMistakeIsOneLineWithItsCauseAndNothingSpooledWhileOfflineSpools(KafkaBroker broker) throws Exception {
        Path keystore = SelfSignedKeystore.create(dir.resolve("collector.p12"), "changeit");
        Map<String, String> settings = new HashMap<>(Map.of("kafka.bootstrap.servers", broker.bootstrapServers(), "collector.http.port", "0",
                "collector.fleets", "phones", "collector.fleet.phones.token.sha256", Tokens.sha256Hex(TOKEN), "collector.fleet.phones.deployments",
                "android-*", "collector.http.tls.keystore", keystore.toString(), "collector.http.tls.keystore.password", "changeit"));
        try (Collector collector = Collector.start(CollectorConfig.from(Settings.of(settings)), new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))) {
            String https = collector.url();
            assertThat(https).startsWith("https://");

            Run untrusted = load(https, TOKEN);
            assertThat(untrusted.exit()).as(untrusted.out() + untrusted.err()).isEqualTo(2);
            assertThat(untrusted.err().strip()).startsWith("error: TLS with the collector at " + https + "/v1/loads failed: its certificate was refused (")
                    .contains("does not trust")
                    .doesNotContain("\tat ").doesNotContain("\n");
            assertThat(spooled()).isZero();

            String http = https.replace("https://", "http://");
            Run plain = load(http, TOKEN);
            assertThat(plain.exit()).as(plain.out() + plain.err()).isEqualTo(2);
            assertThat(plain.err().strip()).isEqualTo("error: the collector at " + http + "/v1/loads answered in TLS, not HTTP: it is served over "
                    + "HTTPS; use https://");
            assertThat(spooled()).isZero();

            Run verbose = load(http, TOKEN, "--verbose");
            assertThat(verbose.err()).as("--verbose shows the cause chain").contains("Caused by: ");
        }

        // Offline: what the spool is for; the reason is said, the load kept.
        Run offline = load("http://127.0.0.1:" + EmbeddedKafkaBroker.freePort(), TOKEN);
        assertThat(offline.exit()).as(offline.err()).isZero();
        assertThat(offline.out()).contains("is unreachable").contains("kept in " + dir.resolve("spool"));
        assertThat(spooled()).isEqualTo(1);
    }
}
