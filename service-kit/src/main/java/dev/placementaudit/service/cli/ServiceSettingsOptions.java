package dev.placementaudit.service.cli;

import dev.placementaudit.service.Settings;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * {@code --config FILE} and {@code --set KEY=VALUE}: the settings layers of a service's {@code run}, named for the
 * service ({@code worker run} reads {@code conf/worker.properties} and {@code worker.*} keys, {@code collector run}
 * the collector's).
 */
public final class ServiceSettingsOptions {
    @Option(names = "--config", paramLabel = "FILE", description = "properties file (${PARENT-COMMAND-NAME}.*, kafka.*, connect.timeout); env "
            + "PA_* and -D override it (default: conf/${PARENT-COMMAND-NAME}.properties of the distribution, or of $PA_CONF_DIR, which "
            + "documents every key)") Path config;

    @Option(names = "--set", paramLabel = "KEY=VALUE", mapFallbackValue = "", description = "a setting that wins over every other layer, "
            + "e.g. --set ${PARENT-COMMAND-NAME}.http.port=0 (repeatable)") Map<String, String> overrides = new LinkedHashMap<>();

    /** Defaults, then {@code conf/<file>} (or {@code --config}), env {@code PA_*}, {@code -D}, and last {@code --set}. */
    public Settings load(String file) {
        return Settings.load(ConfDir.orDefault(config, file), overrides);
    }
}
