package dev.placementaudit.store.replay;

import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code store rebuild}'s table of digests reads in columns, whatever the tables' names and digests' lengths (issue 56). */
class RebuildComparisonTest {

    @Test
    void liveAndRebuiltDigestsLineUpInColumnsWithTheVerdictLast() {
        Map<String, String> live = new LinkedHashMap<>();
        Map<String, String> rebuilt = new LinkedHashMap<>();
        List<String> tables = ProjectionDigest.tables();
        for (int i = 0; i < tables.size(); i++) {
            String rows = (i * 1_234_567L) + " rows " + "ab".repeat(8);
            live.put(tables.get(i), rows);
            rebuilt.put(tables.get(i), i == 1 ? "0 rows " + "cd".repeat(8) : rows);
        }

        List<String> lines = ProjectionRebuild.comparison(live, rebuilt).lines().toList();

        assertThat(lines).hasSize(tables.size() + 1);
        assertThat(tables.stream().mapToInt(String::length).max().orElseThrow()).as("names longer than the old 10 columns").isGreaterThan(10);
        int rebuiltColumn = lines.get(0).indexOf("rebuilt");
        for (int i = 1; i < lines.size(); i++) {
            String line = lines.get(i);
            String table = tables.get(i - 1);
            assertThat(line.indexOf(live.get(table))).as(line).isEqualTo(lines.get(0).indexOf("live"));
            assertThat(line.indexOf(rebuilt.get(table), rebuiltColumn)).as(line).isEqualTo(rebuiltColumn);
            assertThat(line).endsWith(i == 2 ? "DIFFERENT" : "equal");
        }
    }
}
