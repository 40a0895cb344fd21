package dev.placementaudit.cli;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.MatchResult;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The README's tour, read from README.md itself, run line by line in one shell against a running
 * {@code placement-audit demo --serve} started from the packaged distribution, exactly as a newcomer would after
 * {@code ./demo.sh --serve}. Each command must exit 0 and print the line its {@code #>} comment promises.
 */
class TourIT {
    private static final Pattern RESULT = Pattern.compile("^@@@ (\\d+) exit (\\d+) ms (\\d+)$", Pattern.MULTILINE);
    private static final Duration DEMO_START = Duration.ofMinutes(3);
    private static final Duration COMMAND_BOUND = Duration.ofSeconds(60);

    @TempDir
    static Path work;
    static Process demo;
    static Path demoLog;

    record Step(String command, List<String> expected) {
    }

    @BeforeAll
    static void startTheDemoAsAUserWould() throws Exception {
        demoLog = work.resolve("demo.log");
        Launcher launcher = Launcher.of(Launcher.packagedHome(), work).withEnv(Map.of("JAVA_OPTS", "-Xmx1g"));
        demo = launcher.spawn(demoLog, "demo", "--serve", "--kafka-port", "0", "--http-port", "0");
        long deadline = System.nanoTime() + DEMO_START.toNanos();
        while (!Files.readString(demoLog).contains("point the CLI at this demo")) {
            if (!demo.isAlive() || System.nanoTime() > deadline) {
                fail("the demo did not come up serving:\n" + Files.readString(demoLog));
            }
            Thread.sleep(200);
        }
    }

    @AfterAll
    static void stopTheDemo() throws Exception {
        if (demo != null) {
            demo.descendants().forEach(ProcessHandle::destroy);
            demo.destroy();
            demo.waitFor();
        }
    }

    /**
     * The demo's story as the dashboard tells it: android-000's diff from r1 to r2 (its root causes). The tour publishes
     * loads of its own deployments, so the story reads the same after it, and r2's incidents are the same ones, still
     * open (their exposure may change: the tour's fleet adds deployments to r2) (issue 56).
     */
    private static final String STORY = "placement-audit store diff --deployment android-000 --model llama-3.2-1b-q4km --from r1 --to r2 "
            + "--format json";
    private static final String INCIDENTS = "placement-audit store incidents --open --release r2";
    private static final Pattern INCIDENT_ID = Pattern.compile("inc-[0-9a-f]{4,}");

    @Test
    void everyCommandOfTheReadmesTourWorksVerbatim() throws Exception {
        List<Step> tour = tour(Path.of(System.getProperty("pa.readme")));
        assertThat(tour).as("the tour's commands").hasSizeGreaterThanOrEqualTo(10);
        String storyBefore = run(STORY);
        assertThat(storyBefore).contains("\"causes\"").contains("LOST_MAPPING");
        List<String> incidentsBefore = INCIDENT_ID.matcher(run(INCIDENTS)).results().map(MatchResult::group).toList();
        assertThat(incidentsBefore).as("r2's open incidents").isNotEmpty();

        Launcher.Run run = Launcher.Run.of(Launcher.of(Launcher.packagedHome(), work).builder(List.of("bash", "-c", script(tour)))
                .redirectErrorStream(true), Duration.ofMinutes(5));
        String output = run.out();

        Matcher results = RESULT.matcher(output);
        int checked = 0;
        int from = 0;
        while (results.find()) {
            int index = Integer.parseInt(results.group(1));
            Step step = tour.get(index);
            String said = output.substring(from, results.start());
            from = results.end();
            assertThat(Integer.parseInt(results.group(2))).as("exit code of `%s`; it printed:%n%s", step.command(), said).isZero();
            assertThat(Long.parseLong(results.group(3))).as("ms taken by `%s`", step.command()).isLessThan(COMMAND_BOUND.toMillis());
            for (String expected : step.expected()) {
                assertThat(said).as("output of `%s`", step.command()).contains(expected);
            }
            checked++;
        }
        assertThat(checked).as("commands that ran; the whole output:%n%s", output).isEqualTo(tour.size());
        assertThat(run(STORY)).as("the demo's story after the whole tour").isEqualTo(storyBefore);
        assertThat(INCIDENT_ID.matcher(run(INCIDENTS)).results().map(MatchResult::group).toList()).as("r2's open incidents after the tour")
                .containsExactlyElementsOf(incidentsBefore);
    }

    /** A command in the demo's environment, as the tour's first line sets it up. */
    private static String run(String command) throws Exception {
        Launcher.Run run = Launcher.Run.of(Launcher.of(Launcher.packagedHome(), work).builder(List.of("bash", "-c",
                        ". data/demo/demo.env && " + command))
                .redirectErrorStream(true), Duration.ofMinutes(1));
        assertThat(run.exit()).as("`%s` printed %s", command, run.out()).isZero();
        return run.out();
    }

    /** The first bash block after "## A tour": commands (with \ continuations), each followed by its "#> " lines. */
    static List<Step> tour(Path readme) throws IOException {
        List<String> lines = Files.readAllLines(readme, StandardCharsets.UTF_8);
        int heading = lines.indexOf("## A tour");
        assertThat(heading).as("README.md has a '## A tour' section").isNotNegative();
        int start = heading + 1;
        while (!lines.get(start).equals("```bash")) {
            start++;
        }
        List<Step> steps = new ArrayList<>();
        StringBuilder command = new StringBuilder();
        for (int i = start + 1; !lines.get(i).equals("```"); i++) {
            String line = lines.get(i);
            if (line.startsWith("#> ")) {
                steps.get(steps.size() - 1).expected().add(line.substring(3));
            } else if (!line.isBlank() && !line.startsWith("#")) {
                command.append(line);
                if (line.endsWith("\\")) {
                    command.append('\n');
                } else {
                    steps.add(new Step(command.toString(), new ArrayList<>()));
                    command.setLength(0);
                }
            }
        }
        for (Step step : steps) {
            if (!step.command().startsWith(". ")) {
                assertThat(step.expected()).as("a '#> ' line after `%s` saying what it prints", step.command()).isNotEmpty();
            }
        }
        return steps;
    }

    /** One shell, so that what the first line sources holds for the rest; each command framed by its exit code and time. */
    private static String script(List<Step> tour) {
        StringBuilder script = new StringBuilder("set +e\n");
        for (int i = 0; i < tour.size(); i++) {
            script.append("started=$(date +%s%3N)\n")
                    .append(tour.get(i).command()).append('\n')
                    .append("code=$?; echo; echo \"@@@ ").append(i).append(" exit $code ms $(( $(date +%s%3N) - started ))\"\n");
        }
        return script.toString();
    }
}
