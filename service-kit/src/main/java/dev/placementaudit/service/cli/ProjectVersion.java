package dev.placementaudit.service.cli;

import picocli.CommandLine;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/** The project's version, as the build stamped it; every command's {@code --version} prints it. */
public final class ProjectVersion implements CommandLine.IVersionProvider {
    private static final String VERSION = read();

    public static String get() {
        return VERSION;
    }

    @Override
    public String[] getVersion() {
        return new String[]{"placement-audit " + VERSION,
                "Java " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name") + ")"};
    }

    private static String read() {
        Properties properties = new Properties();
        try (InputStream in = ProjectVersion.class.getResourceAsStream("version.properties")) {
            if (in == null) {
                return "dev";
            }
            properties.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return properties.getProperty("version", "dev");
    }
}
