package dev.placementaudit.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code placement-audit demo}, as a user runs it from the distribution: its report names every alert with its root
 * causes, the example regression as causes (not 33 findings), says how many alerts there are, and reads the same
 * from one run to the next.
 */
class DemoIT {

    @Test
    void theReportShowsEveryAlertWithItsCauseInTheSameOrderEveryRun(@TempDir Path first, @TempDir Path second) throws Exception {
        Launcher.Run one = Launcher.of(Launcher.packagedHome(), first).run(Duration.ofSeconds(120), "demo", "--dir", "data");
        Launcher.Run two = Launcher.of(Launcher.packagedHome(), second).run(Duration.ofSeconds(120), "demo", "--dir", "data");

        assertThat(one.exit()).as(one.err()).isZero();
        assertThat(two.exit()).as(two.err()).isZero();
        String alerts = section(one.out(), "ALERTS");
        assertThat(alerts).startsWith("ALERTS (published to placement-alerts): 18\n");
        List<String> lines = alerts.lines().skip(1).toList();
        assertThat(lines).hasSize(36);
        for (int i = 0; i < lines.size(); i += 2) {
            assertThat(lines.get(i)).as("alert line").matches("  (LOST_MAPPING|OFFHEAP_GROWTH) .*");
            assertThat(lines.get(i + 1)).as("its cause, right under it").startsWith("      why: ").contains("tensors re-encoded at load");
        }
        assertThat(alerts).contains("OFFHEAP_GROWTH  server-002   llama-3.2-1b-q4km    r1 -> r2")
                .contains("      why: 16 tensors re-encoded at load (Float32/Q6_K -> Float32/Dense(4B)): +814 MB off-heap");
        assertThat(section(two.out(), "ALERTS")).as("the same alerts in the same order").isEqualTo(alerts);
        String regression = section(one.out(), "REGRESSION");
        assertThat(regression).contains("1 root causes").contains("16 tensors re-encoded at load (Float32/Q6_K -> Float32/Dense(4B)): lost mapping")
                .contains("... and 13 more");
        assertThat(section(two.out(), "REGRESSION")).isEqualTo(regression);
    }

    /** From the line starting with {@code heading} to the next blank line. */
    private static String section(String out, String heading) {
        int start = out.indexOf("\n" + heading) + 1;
        assertThat(start).as("a %s section in:%n%s", heading, out).isPositive();
        int end = out.indexOf("\n\n", start);
        return out.substring(start, end < 0 ? out.length() : end + 1);
    }
}
