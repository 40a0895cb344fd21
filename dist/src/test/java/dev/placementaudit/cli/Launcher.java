package dev.placementaudit.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs the packaged {@code bin/placement-audit} as a user's shell would: a new process, its own working directory and
 * environment, with a bound on how long it may take.
 */
final class Launcher {
    private final Path home;
    private final Map<String, String> env;
    private final Path workDir;

    private Launcher(Path home, Map<String, String> env, Path workDir) {
        this.home = home;
        this.env = env;
        this.workDir = workDir;
    }

    /** The distribution the build laid out, in an environment with nothing of this build's in it. */
    static Launcher of(Path home, Path workDir) {
        return new Launcher(home, Map.of(), workDir);
    }

    /** The distribution under test: dist/target/placement-audit-VERSION, as {@code package} wrote it. */
    static Path packagedHome() {
        String dir = System.getProperty("pa.dist.dir");
        if (dir == null || !Files.isDirectory(Path.of(dir))) {
            throw new IllegalStateException("no packaged distribution at " + dir + ": run through `mvn verify`, which packages it first");
        }
        return Path.of(dir);
    }

    Launcher withEnv(Map<String, String> more) {
        Map<String, String> merged = new java.util.HashMap<>(env);
        merged.putAll(more);
        return new Launcher(home, Map.copyOf(merged), workDir);
    }

    /** The value this launcher's environment gives a variable; null when it sets none. */
    String env(String name) {
        return env.get(name);
    }

    /** A clean environment: a PATH to find java and the shell's tools, and what the test adds. Nothing inherited. */
    ProcessBuilder builder(List<String> command) {
        ProcessBuilder builder = new ProcessBuilder(command).directory(workDir.toFile());
        builder.environment().clear();
        builder.environment().put("PATH", "/usr/local/bin:/usr/bin:/bin");
        builder.environment().put("HOME", workDir.toString());
        builder.environment().putAll(env);
        return builder;
    }

    Run run(Duration limit, String... args) throws IOException, InterruptedException {
        return Run.of(builder(command(args)), limit);
    }

    /** A long-running command (a service, the demo) in the background, its stdout and stderr going to {@code log}. */
    Process spawn(Path log, String... args) throws IOException {
        return builder(command(args)).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    private List<String> command(String... args) {
        List<String> command = new ArrayList<>();
        command.add(home.resolve("bin/placement-audit").toString());
        command.addAll(List.of(args));
        return command;
    }

    /** What a finished (or killed) command left: exit code, both streams, and how long it took. */
    record Run(List<String> command, int exit, String out, String err, Duration took) {
        static Run of(ProcessBuilder builder, Duration limit) throws IOException, InterruptedException {
            Path out = Files.createTempFile("pa-out", ".txt");
            Path err = Files.createTempFile("pa-err", ".txt");
            builder.redirectOutput(out.toFile()).redirectError(err.toFile()).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            long started = System.nanoTime();
            Process process = builder.start();
            boolean finished = process.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS);
            if (!finished) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly().waitFor();
            }
            Duration took = Duration.ofNanos(System.nanoTime() - started);
            Run run = new Run(builder.command(), finished ? process.exitValue() : -1, Files.readString(out, StandardCharsets.UTF_8),
                    Files.readString(err, StandardCharsets.UTF_8), took);
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
            return run;
        }

        @Override
        public String toString() {
            return String.join(" ", command) + "\n  exit " + exit + " after " + took.toMillis() + " ms\n  stdout: " + out + "\n  stderr: " + err;
        }
    }
}
