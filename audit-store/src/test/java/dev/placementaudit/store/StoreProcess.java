package dev.placementaudit.store;

import dev.placementaudit.store.cli.AuditStoreCli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** A {@code store} command ({@code run}, {@code prune}, ...) as a process of its own (this test JVM's classpath), so that a test can kill it with SIGKILL. */
final class StoreProcess {
    private StoreProcess() {
    }

    static Process start(Map<String, String> settings, Path log) throws Exception {
        List<String> args = new ArrayList<>(List.of("run"));
        settings.forEach((k, v) -> {
            args.add("--set");
            args.add(k + "=" + v);
        });
        return command(args, log);
    }

    /** {@code store ARGS...}, its output and errors appended to {@code log}. */
    static Process command(List<String> args, Path log) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
                "-cp", System.getProperty("java.class.path"), AuditStoreCli.class.getName()));
        command.addAll(args);
        Files.createDirectories(log.getParent());
        return new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    }
}
