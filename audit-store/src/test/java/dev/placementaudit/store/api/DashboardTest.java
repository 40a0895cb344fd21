package dev.placementaudit.store.api;

import dev.placementaudit.events.ModelLoaded;
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
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The dashboard end to end in headless Chromium (Debian's package), along the path an SRE takes: the overview leads
 * with the incidents (one per cause, with exposure), each opening to its deployments and a representative diff, then
 * lists every alert with its cause and links to its diff; the diff shows the root causes, expandable to each tensor with both
 * sides' bytes, formats and reasons, and links to the loads; a load lists every tensor (filterable) and links to a
 * tensor's history; the history and the chart of bytes over time complete it. Each step follows the link the page
 * before it rendered. Screenshots are kept in target/ as artifacts.
 */
@ExtendWith(KafkaBrokerExtension.class)
class DashboardTest {
    private static final Pattern HREF = Pattern.compile("href=\"(#[a-z]+\\?[^\"]+)\"");

    @Test
    void anSreFollowsAnAlertToItsCauseToTheTensorsAndTheirHistory(KafkaBroker broker) throws Exception {
        Path chromium = chromium();
        try (TestDatabase db = DatabaseTargets.open(TestDatabase.Kind.H2)) {
            StoreHarnessAccess h = new StoreHarnessAccess(broker, db);
            ModelLoaded r2 = StoreHarnessAccess.load("phone-1", "r2", 3, 24, true);
            var published = h.publish(List.of(StoreHarnessAccess.load("phone-1", "r1", 3, 0, false), r2,
                    StoreHarnessAccess.load("phone-2", "r1", 3, 1, false), StoreHarnessAccess.load("phone-2", "r2", 3, 25, false)));
            // phone-1's runtime reports what it held: as planned on r1, 100 MB more off-heap than planned on r2.
            h.publishObservation(published.get(0), 0);
            h.publishObservation(published.get(1), 100L << 20);
            Map<String, String> settings = h.settings();
            settings.put("store.http.port", "0");
            try (AuditStore store = h.start(settings)) {
                await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM loads WHERE complete = TRUE") == 4
                        && h.count("SELECT COUNT(*) FROM alerts") == 2 && h.count("SELECT COUNT(*) FROM runtime_findings") == 1);
                String base = "http://127.0.0.1:" + store.port() + "/";

                String overview = page(chromium, base, "overview");
                assertThat(overview).contains("Alerts (2)").contains("OFFHEAP_GROWTH").contains("LOST_MAPPING")
                        .contains("3 tensors re-encoded at load (Float32/Q4_K -&gt; Float32/Dense(4B)): lost mapping, +12 MB off-heap")
                        .contains("Fleet on release").contains("regressions: phone-1").contains("last updated");
                assertThat(overview).contains("Incidents: 2 open (one per cause across the fleet)").contains("1 of 2").contains("50%")
                        .contains("UNPLANNED_OFFHEAP").contains("off-heap observed").contains("112 MB (+100 MB)");
                String incidentLink = links(overview, "#incident?").stream().filter(l -> !l.startsWith("#incident?id=inc-r")).findFirst().orElseThrow();
                assertThat(incidentLink).matches("#incident\\?id=inc-[0-9a-f]{16}");
                String incident = page(chromium, base + incidentLink, "incident");
                assertThat(incident).contains("sample-model · r1 → r2").contains("OPEN · LOST_MAPPING · 1 of 2 deployments (50%)")
                        .contains("Deployments: 1 showing it now, 1 ever").contains("One of them: phone-1")
                        .contains("Diff: phone-1 · sample-model · r1 → r2").contains("3 tensor(s)");
                assertThat(incident).as("a few tensors, in view; the exposure drawn as steps").contains("<details id=\"incident-tensors\" open=\"\"")
                        .contains("id=\"exposure-chart\"").contains("class=\"series exposure\"");
                String runtimeIncident = page(chromium, base + links(overview, "#incident?id=inc-r").get(0), "incident");
                assertThat(runtimeIncident).contains("sample-model · on r2").doesNotContain("r2 → r2").contains("planned: off-heap, planned")
                        .contains("observed: off-heap, observed").contains("No tensor named: the runtime measured bytes per domain.");
                String diffLink = link(overview, "#diff?");
                assertThat(diffLink).isEqualTo("#diff?deployment=phone-1&model=sample-model&from=r1&to=r2");

                String diff = page(chromium, base + diffLink, "diff");
                assertThat(diff).contains("Diff: phone-1 · sample-model · r1 → r2").contains("1 root cause, largest first")
                        .contains("<details class=\"cause-group\" open=\"\">")
                        .contains("MAPPED_OK → REENCODED_AT_LOAD")
                        .contains("blk.0.attn_q.weight").contains("576 KB").contains("4 MB")
                        .contains("Float32/Q4_K → Float32/Dense(4B)").contains("before: ").contains("after: ")
                        .contains("OFFHEAP_GROWTH: 512 KB → 12 MB");
                String loadLink = links(diff, "#load?").get(1);
                assertThat(loadLink).isEqualTo("#load?id=" + r2.getLoadId());

                String load = page(chromium, base + loadLink, "load");
                assertThat(load).contains("phone-1 · sample-model · r2").contains("5 of 5 tensors").contains("HOST_OFFHEAP")
                        .contains("REENCODED_AT_LOAD");
                String filtered = page(chromium, base + loadLink + "&filter=attn_q", "load");
                assertThat(filtered).contains("3 of 5 tensors");
                String tensorLink = links(load, "#tensor?").stream().filter(l -> l.contains("blk.1.attn_q.weight")).findFirst().orElseThrow();

                String tensor = page(chromium, base + tensorLink, "tensor");
                assertThat(tensor).contains("Tensor blk.1.attn_q.weight on phone-1 · sample-model, release after release")
                        .contains("MMAP_FILE").contains("HOST_OFFHEAP").contains("<tr class=\"moved\">");
                assertThat(link(tensor, "#diff?")).isEqualTo(diffLink);
                String historyLink = link(tensor, "#history?");

                String history = page(chromium, base + historyLink, "history");
                assertThat(history).contains("Bytes per domain over time: phone-1 · sample-model").contains("<polyline")
                        .contains("class=\"time-tick\"").contains("2026-11-01 00:00").contains("r2 off-heap 12 MB")
                        .contains("dashed: as the runtime observed it").contains("r2 off-heap observed 112 MB").contains("r1 off-heap observed 512 KB");
                assertThat(link(history, "#diff?")).isEqualTo(diffLink);
                Matcher observed = Pattern.compile("<polyline points=\"([^\"]+)\"[^>]*class=\"series observedOffHeapBytes\"").matcher(history);
                assertThat(observed.find()).as("the observed off-heap series").isTrue();
                assertThat(observed.group(1).split(" ")).as("two observed loads drawn as a step, as the planned series").hasSize(3);

                Path screenshot = Path.of("target", "dashboard-diff.png").toAbsolutePath();
                run(chromium, "--screenshot=" + screenshot, "--window-size=1400,1100", base + diffLink);
                assertThat(Files.size(screenshot)).isGreaterThan(10_000);
                run(chromium, "--screenshot=" + Path.of("target", "dashboard.png").toAbsolutePath(), "--window-size=1400,1100", base);
                run(chromium, "--screenshot=" + Path.of("target", "dashboard-incident.png").toAbsolutePath(), "--window-size=1400,1400",
                        base + incidentLink);
                run(chromium, "--screenshot=" + Path.of("target", "dashboard-incidents.png").toAbsolutePath(), "--window-size=1400,900",
                        base + "#incidents");
            }
        }
    }

    @Test
    void anSreClicksFromAnAlertToItsCauseToATensorsHistory(KafkaBroker broker) throws Exception {
        Path chromium = chromium();
        try (TestDatabase db = DatabaseTargets.open(TestDatabase.Kind.H2)) {
            StoreHarnessAccess h = new StoreHarnessAccess(broker, db);
            h.publish(List.of(StoreHarnessAccess.load("phone-1", "r1", 3, 0, false), StoreHarnessAccess.load("phone-1", "r2", 3, 24, true)));
            Map<String, String> settings = h.settings();
            settings.put("store.http.port", "0");
            try (AuditStore store = h.start(settings)) {
                await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM alerts") == 2);
                try (Browser browser = Browser.open(chromium, "http://127.0.0.1:" + store.port() + "/")) {
                    browser.awaitView("overview");
                    assertThat(browser.text()).contains("OFFHEAP_GROWTH").contains("3 tensors re-encoded at load");

                    // The incidents page of its own: by state, filtered by release and model, and back.
                    assertThat(browser.clickLink("all incidents: open, acknowledged, resolved, by release and model")).isEqualTo("#incidents");
                    browser.awaitView("incidents");
                    assertThat(browser.text()).contains("Open (1)").contains("Acknowledged (0)").contains("Resolved (0)");
                    assertThat(browser.visibleRows("incidents")).hasSize(1).allSatisfy(row -> assertThat(row).contains("r1 → r2"));
                    browser.evaluate("(() => { const s = document.getElementById('release-filter'); s.value = 'r1'; s.onchange(); return 1; })()");
                    await().atMost(Duration.ofSeconds(20)).until(() -> browser.text().contains("Open (0)"));
                    assertThat(browser.evaluate("location.hash").asText()).isEqualTo("#incidents?release=r1");
                    browser.evaluate("(() => { const s = document.getElementById('release-filter'); s.value = 'r2'; s.onchange(); return 1; })()");
                    await().atMost(Duration.ofSeconds(20)).until(() -> browser.text().contains("Open (1)"));
                    browser.clickLink("overview");
                    browser.awaitView("overview");

                    assertThat(browser.clickLink("r1 → r2")).startsWith("#diff?");
                    browser.awaitView("diff");
                    String diff = browser.text();
                    assertThat(diff).contains("1 root cause, largest first").contains("blk.0.attn_q.weight")
                            .contains("before: blk.0.attn_q.weight: MMAP_FILE/MODEL").contains("after: blk.0.attn_q.weight: HOST_OFFHEAP/MODEL");

                    browser.clickLink("r2");
                    browser.awaitView("load");
                    assertThat(browser.visibleRows("tensors")).hasSize(5);
                    browser.type("filter", "attn_q");
                    assertThat(browser.visibleRows("tensors")).hasSize(3).allSatisfy(row -> assertThat(row).contains("attn_q"));
                    assertThat(browser.text()).contains("3 of 5 tensors");
                    assertThat(browser.evaluate("location.hash").asText()).as("the filter kept in the address").endsWith("&filter=attn_q");

                    browser.clickLink("blk.1.attn_q.weight");
                    browser.awaitView("tensor");
                    assertThat(browser.visibleRows("history")).hasSize(2).satisfiesExactly(
                            r1 -> assertThat(r1).contains("r1").contains("MMAP_FILE"),
                            r2 -> assertThat(r2).contains("r2").contains("HOST_OFFHEAP"));

                    browser.clickLink("phone-1 · sample-model");
                    browser.awaitView("history");
                    assertThat(browser.evaluate("document.querySelectorAll('#chart polyline').length").asInt()).isEqualTo(3);
                    assertThat(browser.evaluate("document.querySelector('#chart polyline').getAttribute('points').split(' ').length").asInt())
                            .as("two loads drawn as a step: the first load's bytes hold until the second").isEqualTo(3);
                    assertThat(browser.evaluate("history.length").asInt()).as("each click a new entry: back works").isGreaterThanOrEqualTo(5);
                }
            }
        }
    }

    /** The page at the address, once its script has rendered the view (data-ready) and nothing went wrong. */
    private static String page(Path chromium, String url, String view) throws Exception {
        String dom = run(chromium, "--dump-dom", url);
        assertThat(dom).as(url).contains("data-ready=\"true\"").contains("data-view=\"" + view + "\"");
        return dom;
    }

    private static String link(String dom, String prefix) {
        List<String> all = links(dom, prefix);
        assertThat(all).as("a link starting %s", prefix).isNotEmpty();
        return all.get(0);
    }

    private static List<String> links(String dom, String prefix) {
        List<String> found = new ArrayList<>();
        Matcher m = HREF.matcher(dom);
        while (m.find()) {
            String href = m.group(1).replace("&amp;", "&");
            if (href.startsWith(prefix)) {
                found.add(href);
            }
        }
        return found;
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
