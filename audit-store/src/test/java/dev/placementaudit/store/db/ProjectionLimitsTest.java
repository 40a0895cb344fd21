package dev.placementaudit.store.db;

import dev.placementaudit.schemas.ProjectionLimits;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/** The worker refuses what the store cannot hold by ProjectionLimits; the DDL must say the same lengths, or they drift. */
class ProjectionLimitsTest {
    private static final Pattern TABLE = Pattern.compile("^CREATE TABLE (\\w+) \\(");
    private static final Pattern VARCHAR = Pattern.compile("^\\s+(\\w+)\\s+VARCHAR\\((\\d+)\\)");

    /** table.column -> length, for every VARCHAR column the migrations create. */
    private static Map<String, Integer> declared() throws Exception {
        Map<String, Integer> columns = new HashMap<>();
        try (var files = Files.list(Path.of("src/main/resources/db/migration"))) {
            for (Path file : files.sorted().toList()) {
                String table = null;
                for (String line : Files.readAllLines(file)) {
                    Matcher t = TABLE.matcher(line);
                    if (t.find()) {
                        table = t.group(1);
                    }
                    Matcher c = VARCHAR.matcher(line);
                    if (table != null && c.find()) {
                        columns.put(table + "." + c.group(1), Integer.parseInt(c.group(2)));
                    }
                }
            }
        }
        return columns;
    }

    @Test
    void everyLimitTheWorkerChecksIsTheLengthTheDdlDeclares() throws Exception {
        Map<String, Integer> declared = declared();

        assertThat(declared).containsKeys("loads.deployment_id", "decisions.tensor_name");
        ProjectionLimits.COLUMNS.forEach((column, limit) -> assertThat(declared.get(column)).as(column).isEqualTo(limit));
    }
}
