package dev.placementaudit.worker;

import dev.placementaudit.core.placement.AllocationResolver;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/** The resolver version stamped on every decision: this build plus the placement rule set it ports. */
public final class WorkerVersion {
    private WorkerVersion() {
    }

    public static String build() {
        Properties properties = new Properties();
        try (InputStream in = WorkerVersion.class.getResourceAsStream("/resolver-worker.properties")) {
            if (in != null) {
                properties.load(in);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return properties.getProperty("version", "dev");
    }

    public static String resolverVersion() {
        return build() + "/" + AllocationResolver.RULES_VERSION;
    }
}
