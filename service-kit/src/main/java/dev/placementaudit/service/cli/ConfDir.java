package dev.placementaudit.service.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Where a command finds its configuration when none is named: {@code $PA_CONF_DIR}, else the {@code conf/} folder of
 * the distribution it runs from (the launcher passes its home as {@code app.home}).
 */
public final class ConfDir {
    private ConfDir() {
    }

    public static Optional<Path> dir() {
        String env = System.getenv("PA_CONF_DIR");
        if (env != null && !env.isBlank()) {
            return Optional.of(Path.of(env));
        }
        String home = System.getProperty("app.home");
        return home == null || home.isBlank() ? Optional.empty() : Optional.of(Path.of(home, "conf"));
    }

    /** {@code name} in the configuration folder, when it exists there. */
    public static Optional<Path> file(String name) {
        return dir().map(d -> d.resolve(name)).filter(Files::isRegularFile);
    }

    /** The file a command was given, else its default in the configuration folder, else none. */
    public static Path orDefault(Path given, String defaultName) {
        return given != null ? given : file(defaultName).orElse(null);
    }
}
