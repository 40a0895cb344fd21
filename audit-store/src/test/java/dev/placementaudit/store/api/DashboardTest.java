package dev.placementaudit.store.api;

import dev.placementaudit.store.AuditStore;
import dev.placementaudit.store.StoreHarnessAccess;
import dev.placementaudit.testkit.DatabaseTargets;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.RequiredTool;
import dev.placementaudit.testkit.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The dashboard end to end in headless Chromium (Debian's package): the page loads, its script queries the API and
 * renders the fleet, the chart, the diff with reasons and the alerts. A screenshot is kept in target/ as an artifact.
 */
@ExtendWith(KafkaBrokerExtension.class)
class DashboardTest {

    @Test
    void rendersFleetChartDiffAndAlertsFromTheApi(KafkaBroker broker) throws Exception {
        Path chromium = chromium();
        try (TestDatabase db = DatabaseTargets.open(TestDatabase.Kind.H2)) {
            StoreHarnessAccess h = new StoreHarnessAccess(broker, db);
            h.publish(List.of(StoreHarnessAccess.load("phone-1", "r1", 3, 0, false), StoreHarnessAccess.load("phone-1", "r2", 3, 24, true),
                    StoreHarnessAccess.load("phone-2", "r1", 3, 1, false), StoreHarnessAccess.load("phone-2", "r2", 3, 25, false)));
            Map<String, String> settings = h.settings();
            settings.put("store.http.port", "0");
            try (AuditStore store = h.start(settings)) {
                await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 4
                        && h.count("SELECT COUNT(*) FROM alerts") == 2);
                String url = "http://127.0.0.1:" + store.port() + "/";
                Path screenshot = Path.of("target", "dashboard.png").toAbsolutePath();

                String dom = run(chromium, "--dump-dom", url);
                run(chromium, "--screenshot=" + screenshot, "--window-size=1400,1100", url);

                assertThat(dom).contains("data-ready=\"true\"");
                assertThat(dom).contains("phone-1").contains("phone-2");
                assertThat(dom).contains("regressions: phone-1");
                assertThat(dom).contains("<rect").contains("r1 off-heap 512 KB").contains("r2 off-heap 12 MB");
                assertThat(dom).contains("phone-1 · sample-model · r1 → r2").contains("LOST_MAPPING").contains("re-encoded at load");
                assertThat(dom).contains("OFFHEAP_GROWTH").contains("off-heap growth &gt; 10% and &gt; 1 MB");
                assertThat(Files.size(screenshot)).isGreaterThan(10_000);
            }
        }
    }

    private static String run(Path chromium, String... args) throws Exception {
        Path profile = Files.createTempDirectory("pa-chromium-");
        List<String> command = new ArrayList<>(List.of(chromium.toString(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--user-data-dir=" + profile, "--virtual-time-budget=15000"));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        byte[] out = process.getInputStream().readAllBytes();
        assertThat(process.waitFor(90, TimeUnit.SECONDS)).as("chromium finished").isTrue();
        return new String(out, StandardCharsets.UTF_8);
    }

    /** Debian's chromium; under CI=true its absence fails the run (.ci/run installs it), elsewhere the test is aborted. */
    private static Path chromium() {
        return RequiredTool.find("chromium", "chromium", "chromium-browser");
    }
}
