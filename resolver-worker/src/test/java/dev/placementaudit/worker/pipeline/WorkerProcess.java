package dev.placementaudit.worker.pipeline;

import dev.placementaudit.worker.ResolverWorkerMain;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The worker as its own OS process, started through its real entry point, so a test can kill it the way an
 * orchestrator would: SIGKILL (nothing closes, nothing flushes) or SIGTERM (shutdown hooks run).
 */
final class WorkerProcess implements AutoCloseable {
    private final Process process;
    private final Path log;

    private WorkerProcess(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    static WorkerProcess start(Map<String, String> settings, Path log) throws IOException {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
                "-cp", System.getProperty("java.class.path"), ResolverWorkerMain.class.getName(), "run"));
        settings.forEach((key, value) -> {
            command.add("--set");
            command.add(key + "=" + value);
        });
        Files.createDirectories(log.getParent());
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        return new WorkerProcess(process, log);
    }

    /** SIGKILL: the JVM gets no chance to commit, abort or close anything. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /** SIGTERM; returns the exit code, or -1 if it did not exit in time. */
    int terminate(long seconds) throws InterruptedException {
        process.destroy();
        return process.waitFor(seconds, TimeUnit.SECONDS) ? process.exitValue() : -1;
    }

    String log() throws IOException {
        return Files.readString(log);
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            kill();
        }
    }
}
