package dev.placementaudit.store.cli;

import dev.placementaudit.service.Settings;
import dev.placementaudit.service.cli.CommandFailure;
import dev.placementaudit.service.cli.ConfDir;
import dev.placementaudit.store.config.StoreConfig;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * What {@code --store} names, as settings: a JDBC URL as it is; an H2 database file ({@code ./data/audit} or
 * {@code ./data/audit.mv.db}) that exists; or a name {@code NAME} for {@code conf/stores/NAME.properties}. Anything
 * else is an error that lists what was tried, never a new empty store.
 */
final class StoreLocation {
    private static final String H2_SUFFIX = ".mv.db";

    private StoreLocation() {
    }

    static Map<String, String> settings(String store) {
        if (store.startsWith("jdbc:")) {
            return Map.of("store.jdbc.url", store);
        }
        String base = store.endsWith(H2_SUFFIX) ? store.substring(0, store.length() - H2_SUFFIX.length()) : store;
        Path h2 = Path.of(base + H2_SUFFIX);
        if (Files.isRegularFile(h2)) {
            return Map.of("store.jdbc.url", StoreConfig.h2Url(Path.of(base).toAbsolutePath().normalize().toString()));
        }
        if (store.matches("[A-Za-z0-9][A-Za-z0-9._-]*")) {
            var named = ConfDir.file("stores/" + store + ".properties");
            if (named.isPresent()) {
                return read(named.get());
            }
        }
        throw new CommandFailure("no audit store '" + store + "': not a JDBC URL, no H2 database at " + h2.toAbsolutePath().normalize()
                + ConfDir.dir().map(d -> ", no " + d.resolve("stores").resolve(store + ".properties")).orElse("")
                + ". Queries never create a store");
    }

    private static Map<String, String> read(Path file) {
        Map<String, String> settings = Settings.readProperties(file);
        if (!settings.containsKey("store.jdbc.url")) {
            throw new CommandFailure("store definition " + file + " has no store.jdbc.url");
        }
        return settings;
    }
}
