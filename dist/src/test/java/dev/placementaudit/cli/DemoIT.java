package dev.placementaudit.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code placement-audit demo}, as a user runs it from the distribution: its report names each incident (one per cause
 * across the fleet) with its exposure and cause, the example regression as causes (not 33 findings), says how many
 * per-load alerts are behind them, and reads the same from one run to the next.
 */
class DemoIT {

    @Test
    void theReportShowsEveryIncidentWithItsCauseAndExposureInTheSameOrderEveryRun(@TempDir Path first, @TempDir Path second) throws Exception {
        Launcher.Run one = Launcher.of(Launcher.packagedHome(), first).run(Duration.ofSeconds(120), "demo", "--dir", "data");
        Launcher.Run two = Launcher.of(Launcher.packagedHome(), second).run(Duration.ofSeconds(120), "demo", "--dir", "data");

        assertThat(one.exit()).as(one.err()).isZero();
        assertThat(two.exit()).as(two.err()).isZero();
        // One incident per cause (each model's ffn_down weights, once where they were mapped and once where they were
        // already off-heap), with its exposure; the ids are fingerprints, so both runs print the same.
        String incidents = section(one.out(), "INCIDENTS");
        assertThat(incidents).startsWith("INCIDENTS (published to placement-alerts, one per cause): 5\n");
        List<String> lines = incidents.lines().skip(1).toList();
        assertThat(lines).hasSize(11);
        for (int i = 0; i < 8; i += 2) {
            assertThat(lines.get(i)).as("incident line").matches("  inc-[0-9a-f]{16} OPEN +\\S+ +r1 -> r2  (LOST_MAPPING|OFFHEAP_GROWTH)  \\d of 6 deployments \\(\\d+%\\)");
            assertThat(lines.get(i + 1)).as("its cause, right under it").startsWith("      why: ").contains("tensors re-encoded at load");
        }
        // The llama.cpp boxes, loaded by real llama.cpp: the two that map the file lose the mapping of the Q4_0 matrices
        // llama.cpp repacks; the one with mmap off copied them already.
        assertThat(lines.get(8)).matches("  inc-[0-9a-f]{16} OPEN +tiny-llama +r1 -> r2  LOST_MAPPING  2 of 3 deployments \\(67%\\)");
        assertThat(lines.get(9)).startsWith("      why: 15 tensors copied into kernel feed order (Float32/Q8_0 -> Float32/Q4_0): lost mapping");
        String llama = section(one.out(), "LLAMA.CPP");
        assertThat(llama).startsWith("LLAMA.CPP llama-box-1 tiny-llama r1 (Q8_0) -> r2 (Q4_0), loaded by real llama.cpp: llama.cpp b4916 ")
                .containsPattern("why \\S+ moved, as llama.cpp's rules say: llama.cpp b4916 on \\S+: repacked as q4_0_");
        assertThat(section(two.out(), "LLAMA.CPP")).isEqualTo(llama);
        assertThat(incidents).contains("llama-3.2-1b-q4km    r1 -> r2  LOST_MAPPING  4 of 6 deployments (67%)")
                .contains("      why: 16 tensors re-encoded at load (Float32/Q6_K -> Float32/Dense(4B)): lost mapping, +1.0 GB off-heap, -210 MB mapped")
                .contains("behind them: 20 per-load alerts");
        assertThat(section(two.out(), "INCIDENTS")).as("the same incidents in the same order").isEqualTo(incidents);
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
