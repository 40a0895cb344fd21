package dev.placementaudit.testkit;

import org.junit.jupiter.api.Assumptions;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A program a test drives (Debian's chromium, promtool, prometheus, prometheus-alertmanager): under {@code CI=true}
 * its absence fails the run, since {@code .ci/run} installs it; elsewhere the test is aborted, saying what to install.
 */
public final class RequiredTool {
    private RequiredTool() {
    }

    public static Path find(String debianPackage, String... candidates) {
        for (String candidate : candidates) {
            for (String dir : List.of("/usr/bin", "/usr/local/bin", "/usr/sbin")) {
                Path path = candidate.startsWith("/") ? Path.of(candidate) : Path.of(dir, candidate);
                if (Files.isExecutable(path)) {
                    return path;
                }
            }
        }
        String why = String.join(" or ", candidates) + " is not installed (apt-get install " + debianPackage + ")";
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            throw new IllegalStateException(why + ", but CI=true requires the tests that use it to run");
        }
        Assumptions.abort(why);
        return null;
    }
}
