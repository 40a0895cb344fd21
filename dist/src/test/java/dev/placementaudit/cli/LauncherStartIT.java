package dev.placementaudit.cli;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How the launcher starts a command (docs/adr/0007-start-up.md): its family's jars only, a class-data-sharing archive
 * made by the first run and used by the next, and nothing said about either: an archive that cannot be written, or
 * one switched off, changes nothing a user sees.
 */
class LauncherStartIT {
    private static final Path HOME = Launcher.packagedHome();
    private static final Pattern LOADED_FROM = Pattern.compile("^\\[[^]]*]\\[info]\\[class,load] (\\S+) source: (.*)$", Pattern.MULTILINE);

    @Test
    void everyFamilysClassPathNamesOnlyJarsTheDistributionShips() throws Exception {
        List<Path> lists;
        try (Stream<Path> files = Files.list(HOME.resolve("lib/classpath"))) {
            lists = files.filter(f -> f.toString().endsWith(".classpath")).toList();
        }

        assertThat(lists).extracting(p -> p.getFileName().toString())
                .contains("producer.classpath", "resolver-worker.classpath", "audit-store.classpath", "dist.classpath");
        for (Path list : lists) {
            for (String entry : Files.readString(list).trim().split(":")) {
                assertThat(HOME.resolve(entry)).as(list.getFileName() + " names " + entry).isRegularFile();
            }
        }
    }

    @Test
    void aStoreQueryLoadsNeitherTheBrokerNorScalaNorJetty(@TempDir Path work) throws Exception {
        Path log = work.resolve("classes.log");
        Launcher.Run run = Launcher.of(HOME, work).withEnv(Map.of("JAVA_OPTS", "-Xlog:class+load:file=" + log))
                .run(Duration.ofSeconds(30), "store", "where", "--store", "./no-such-store");

        assertThat(run.exit()).as(run.toString()).isEqualTo(2);
        String loaded = Files.readString(log);
        Matcher m = LOADED_FROM.matcher(loaded);
        int fromJars = 0;
        while (m.find()) {
            String type = m.group(1);
            String source = m.group(2);
            assertThat(type).as("loaded by a store query").doesNotStartWith("kafka.").doesNotStartWith("scala.")
                    .doesNotStartWith("org.eclipse.jetty.").doesNotStartWith("io.javalin.").doesNotStartWith("dev.placementaudit.producer.")
                    .doesNotStartWith("dev.placementaudit.worker.").doesNotStartWith("dev.placementaudit.testkit.");
            assertThat(source).as(type + "'s jar").doesNotContain("kafka_2.13").doesNotContain("scala-library")
                    .doesNotContain("testkit-").doesNotContain("demo-");
            fromJars += source.startsWith("file:") || source.startsWith("jar:") ? 1 : 0;
        }
        assertThat(fromJars).as("classes read from jars at all (the log is the one asked for)").isPositive();
    }

    @Test
    void aStoreQuerysClassPathLeavesTheHttpServersJarsOut(@TempDir Path work) throws Exception {
        Launcher.Run run = Launcher.of(HOME, work).withEnv(Map.of("JAVA_OPTS", "-XshowSettings:properties"))
                .run(Duration.ofSeconds(30), "store", "fleet", "--release", "r1", "--store", "./no-such-store");
        Launcher.Run service = Launcher.of(HOME, work).withEnv(Map.of("JAVA_OPTS", "-XshowSettings:properties"))
                .run(Duration.ofSeconds(30), "store", "run", "--help");

        assertThat(run.exit()).as(run.toString()).isEqualTo(2);
        assertThat(classPath(run.err())).as("a query's class path").contains("/h2-", "/postgresql-", "/audit-store-", "/picocli-java17-")
                .doesNotContain("/jetty-", "/javalin-", "/kotlin-stdlib-", "/jakarta.", "/asm-");
        assertThat(classPath(service.err())).as("the service's, which serves the API and the dashboard").contains("/javalin-", "/jetty-server-");
    }

    @Test
    void picocliComesFromTheArchiveToo(@TempDir Path work) throws Exception {
        Launcher launcher = Launcher.of(HOME, work).withEnv(Map.of("PA_CDS_DIR", work.resolve("cds").toString()));
        launcher.run(Duration.ofSeconds(30), "--version");
        Path log = work.resolve("second.log");
        Launcher.Run second = launcher.withEnv(Map.of("JAVA_OPTS", "-Xlog:class+load:file=" + log)).run(Duration.ofSeconds(30), "--version");

        assertThat(second.exit()).as(second.toString()).isZero();
        Matcher m = LOADED_FROM.matcher(Files.readString(log));
        int picocli = 0;
        while (m.find()) {
            if (m.group(1).startsWith("picocli.")) {
                picocli++;
                // The published jar is compiled for Java 5, older than class-data sharing takes (docs/adr/0012).
                assertThat(m.group(2)).as(m.group(1)).startsWith("shared objects file");
            }
        }
        assertThat(picocli).as("picocli classes loaded").isGreaterThan(50);
    }

    /** The class path as {@code -XshowSettings:properties} prints it: the first entry after the key, the rest indented below. */
    private static String classPath(String settings) {
        Matcher m = Pattern.compile("java\\.class\\.path = (.*(?:\\R {8}\\S.*)*)").matcher(settings);
        assertThat(m.find()).as("java.class.path among the settings printed:%n%s", settings).isTrue();
        return m.group(1);
    }

    @Test
    void theFirstRunMakesAnArchiveTheSecondUses(@TempDir Path work) throws Exception {
        Path cache = work.resolve("cds");
        Launcher launcher = Launcher.of(HOME, work).withEnv(Map.of("PA_CDS_DIR", cache.toString()));

        Launcher.Run first = launcher.run(Duration.ofSeconds(30), "store", "--help");
        List<Path> archives = archives(cache);
        Path log = work.resolve("second.log");
        Launcher.Run second = launcher.withEnv(Map.of("JAVA_OPTS", "-Xlog:class+load:file=" + log)).run(Duration.ofSeconds(30), "store", "--help");

        assertThat(first.exit()).as(first.toString()).isZero();
        assertThat(first.err()).as("the archive is made without a word").isEmpty();
        assertThat(archives).hasSize(1);
        assertThat(archives.get(0).getFileName().toString()).startsWith("store-").endsWith(".jsa");
        assertThat(second.exit()).as(second.toString()).isZero();
        assertThat(second.out()).isEqualTo(first.out());
        assertThat(second.err()).isEmpty();
        assertThat(Files.readString(log)).as("the store's classes come from the archive")
                .contains("dev.placementaudit.store.cli.AuditStoreCli source: shared objects file (top)");
    }

    @Test
    void aCacheItCannotWriteOrCdsOffChangesNothingAUserSees(@TempDir Path work) throws Exception {
        cannotWriteOrOffChangesNothing(work, Map.of(), "Java 17");
    }

    /** With these launcher variables (the JVM), each way of having no archive runs as with one, and writes none. */
    private static void cannotWriteOrOffChangesNothing(Path work, Map<String, String> jvm, String java) throws Exception {
        Path readOnly = Files.createDirectory(work.resolve("read-only"));
        Path file = Files.writeString(work.resolve("not-a-directory"), "x");
        readOnly.toFile().setWritable(false, false);
        try {
            for (Map<String, String> env : List.of(Map.of("PA_CDS_DIR", file.resolve("cds").toString()), Map.of("PA_CDS", "off"),
                    Map.of("PA_CDS_DIR", readOnly.resolve("cds").toString()))) {
                Launcher.Run run = Launcher.of(HOME, work).withEnv(jvm).withEnv(env).run(Duration.ofSeconds(30), "--version");

                assertThat(run.exit()).as(env + ": " + run).isZero();
                assertThat(run.out()).as(env.toString()).startsWith("placement-audit ").contains(java);
                assertThat(run.err()).as(env.toString()).isEmpty();
            }
            // On JDK 25 a cache would be made after the command: long enough for one to have appeared.
            Thread.sleep(jvm.isEmpty() ? 0 : 3_000);
            assertThat(files(work.resolve(".cache"))).as("PA_CDS=off writes nothing to the default cache").isEmpty();
        } finally {
            readOnly.toFile().setWritable(true, false);
        }
    }

    @Test
    void onJdk25TheFirstRunRecordsAndTheCacheIsMadeAfterItEnds(@TempDir Path work) throws Exception {
        Path cache = work.resolve("cds");
        Launcher on17 = Launcher.of(HOME, work).withEnv(Map.of("PA_CDS", "off"));
        Launcher launcher = launcher(work, cache, newerJava());

        Launcher.Run first = launcher.run(Duration.ofSeconds(30), "store", "--help");
        Path aot = awaitCache(cache, "store-");
        Path log = work.resolve("second.log");
        Launcher.Run second = launcher.withEnv(Map.of("JAVA_OPTS", "-Xlog:class+load:file=" + log)).run(Duration.ofSeconds(30), "store", "--help");

        assertThat(first.exit()).as(first.toString()).isZero();
        assertThat(first.out()).as("what the recording run prints is the command's alone (the JVM says nothing of its record)")
                .isEqualTo(on17.run(Duration.ofSeconds(30), "store", "--help").out());
        assertThat(first.err()).as("the cache is made without a word").isEmpty();
        assertThat(aot.getFileName().toString()).endsWith(".aot");
        assertThat(files(cache)).as("only the cache is left in the cache's folder").containsExactly(aot);
        assertThat(archives(cache)).as("no class-data archive beside it").isEmpty();
        assertThat(second.exit()).as(second.toString()).isZero();
        assertThat(second.out()).isEqualTo(first.out());
        assertThat(second.err()).isEmpty();
        assertThat(Files.readString(log)).as("the store's classes come from the cache")
                .contains("dev.placementaudit.store.cli.AuditStoreCli source: shared objects file");
    }

    /**
     * The cache is made in the background once the command has exited; what the command wrote to (here a pipe, as in
     * {@code placement-audit store where | jq}) is closed when the command ends, not when the cache is made.
     */
    @Test
    void onJdk25APipeTheCommandWritesToClosesWhenTheCommandEnds(@TempDir Path work) throws Exception {
        Path cache = work.resolve("cds");
        Launcher launcher = launcher(work, cache, newerJava());
        ProcessBuilder builder = launcher.builder(List.of(HOME.resolve("bin/placement-audit").toString(), "--version"))
                .redirectErrorStream(true);

        Process process = builder.start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        boolean cacheMadeBeforeThePipeClosed = !files(cache).stream().filter(f -> f.toString().endsWith(".aot")).toList().isEmpty();
        boolean recordLeftForTheBackground = files(cache).stream().anyMatch(f -> f.toString().endsWith(".config"));
        assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        Path aot = awaitCache(cache, "version-");

        assertThat(cacheMadeBeforeThePipeClosed).as("the pipe was held until the cache was made").isFalse();
        assertThat(recordLeftForTheBackground).as("the record was there to make the cache from when the pipe closed").isTrue();
        assertThat(process.exitValue()).isZero();
        assertThat(out).as("the command's output alone").startsWith("placement-audit ").contains("Java 25").doesNotContain("AOT");
        assertThat(aot).isRegularFile();
    }

    /**
     * A terminal closed as the command ends (the shell gone, its process group hung up) does not stop the cache being
     * made: the command runs in a session of its own, as from a terminal, and once it has exited its whole process
     * group is sent SIGHUP and SIGINT again and again until the cache is there.
     */
    @Test
    void onJdk25TheCacheIsMadeThoughTheTerminalHangsUpWhenTheCommandEnds(@TempDir Path work) throws Exception {
        Path cache = work.resolve("cds");
        Launcher launcher = launcher(work, cache, newerJava());
        Path out = work.resolve("out.txt");
        Process process = launcher.builder(List.of("setsid", HOME.resolve("bin/placement-audit").toString(), "--version"))
                .redirectErrorStream(true).redirectOutput(out.toFile()).start();
        assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        boolean recordLeftForTheBackground = files(cache).stream().anyMatch(f -> f.toString().endsWith(".config"));
        String group = "-" + process.pid();

        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        int hangUps = 0;
        while (System.nanoTime() < deadline && !cacheDone(cache)) {
            int left = 0;
            for (String signal : List.of("-HUP", "-INT")) {
                // Fails once nothing of the group is left: the background step has ended, with or without its cache.
                left += new ProcessBuilder("kill", signal, "--", group).redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor() == 0 ? 1 : 0;
            }
            if (left == 0) {
                break;
            }
            hangUps++;
            Thread.sleep(100);
        }

        assertThat(process.exitValue()).isZero();
        assertThat(Files.readString(out)).startsWith("placement-audit ").contains("Java 25");
        assertThat(recordLeftForTheBackground).as("the cache was still to be made when the command ended").isTrue();
        assertThat(hangUps).as("hang-ups sent while the cache was being made").isPositive();
        assertThat(awaitCache(cache, "version-")).as("the cache is made though its process group was hung up " + hangUps + " times")
                .isRegularFile();
    }

    /**
     * A family's first commands started together (a script's parallel queries on a new machine): each runs as it
     * would alone and makes its archive under a name of its own; one of them ends up in place, whole, and nothing else
     * is left behind; the next command uses it.
     */
    @Test
    void firstCommandsStartedTogetherAllRunAndLeaveOneArchive(@TempDir Path work) throws Exception {
        firstCommandsTogether(work, Map.of(), ".jsa");
    }

    @Test
    void onJdk25FirstCommandsStartedTogetherAllRunAndLeaveOneCache(@TempDir Path work) throws Exception {
        firstCommandsTogether(work, Map.of("PA_JAVA", newerJava().toString()), ".aot");
    }

    private static void firstCommandsTogether(Path work, Map<String, String> jvm, String suffix) throws Exception {
        Path cache = work.resolve("cds");
        Launcher launcher = Launcher.of(HOME, work).withEnv(jvm).withEnv(Map.of("PA_CDS_DIR", cache.toString()));
        String alone = Launcher.of(HOME, work).withEnv(jvm).withEnv(Map.of("PA_CDS", "off")).run(Duration.ofSeconds(30), "store", "--help").out();
        int together = 4;
        ExecutorService starts = Executors.newFixedThreadPool(together);
        try {
            List<Future<Launcher.Run>> runs = new ArrayList<>();
            for (int i = 0; i < together; i++) {
                runs.add(starts.submit(() -> launcher.run(Duration.ofSeconds(60), "store", "--help")));
            }
            for (Future<Launcher.Run> future : runs) {
                Launcher.Run run = future.get();
                assertThat(run.exit()).as(run.toString()).isZero();
                assertThat(run.out()).as(run.toString()).isEqualTo(alone);
                assertThat(run.err()).as(run.toString()).isEmpty();
            }
        } finally {
            starts.shutdownNow();
        }
        if (suffix.equals(".aot")) {
            awaitCache(cache, "store-");
            // Each first command made a cache in the background: the last ones may still be moving theirs into place.
            awaitOnly(cache);
        }
        Path log = work.resolve("next.log");
        Launcher.Run next = launcher.withEnv(Map.of("JAVA_OPTS", "-Xlog:class+load:file=" + log)).run(Duration.ofSeconds(30), "store", "--help");

        List<Path> left = files(cache);
        assertThat(left).as("one archive, whole, and no partial one or record left").hasSize(1);
        assertThat(left.get(0).getFileName().toString()).startsWith("store-").endsWith(suffix);
        assertThat(next.exit()).as(next.toString()).isZero();
        assertThat(next.out()).isEqualTo(alone);
        assertThat(next.err()).isEmpty();
        assertThat(Files.readString(log)).as("the next command's classes come from the archive")
                .contains("dev.placementaudit.store.cli.AuditStoreCli source: shared objects file");
    }

    /**
     * A JVM killed while it writes the family's archive (the kernel's OOM killer, a {@code kill -9}) leaves half of one:
     * the launcher puts nothing in place, since JDK 17 maps half an archive and dies of it (SIGBUS) on every later run,
     * and leaves nothing behind. A stand-in for java writes half an archive where it is told to and kills itself; the
     * launcher passes its exit code on. The same on JDK 25: a record half written by a killed JVM is not made into a cache.
     */
    @ParameterizedTest
    @EnumSource(StandIn.class)
    void aJvmKilledWhileWritingItsArchiveLeavesNoArchive(StandIn jdk, @TempDir Path work) throws Exception {
        Path java = jdk.write(work, """
                printf 'half of it' > "$written"
                kill -9 $$
                """);
        Path cache = work.resolve("cds");

        Launcher.Run run = launcher(work, cache, java)
                .run(Duration.ofSeconds(30), "store", "--help");
        Thread.sleep(jdk.settles());

        assertThat(run.exit()).as(run.toString()).isEqualTo(137);
        assertThat(files(cache)).as("nothing put in place, nothing left behind").isEmpty();
    }

    /**
     * A family's first command stopped with Ctrl-C (its process group sent SIGINT, as a terminal does): the JVM still
     * writes what it writes at its exit, and the launcher, which outlives it, removes that rather than leave a file
     * in the cache that no later run would ever look at. The stand-in for java writes it when interrupted, as the JVM
     * does, and exits 130. On JDK 17 and JDK 25 alike.
     */
    @ParameterizedTest
    @EnumSource(StandIn.class)
    void aFirstCommandStoppedWithCtrlCLeavesNothingInTheCache(StandIn jdk, @TempDir Path work) throws Exception {
        Path java = jdk.write(work, """
                trap 'printf "what a JVM writes as it exits" > "$written"; exit 130' INT
                : > "$(dirname "$0")/started"
                while :; do sleep 0.05; done
                """);
        Path cache = work.resolve("cds");
        Path started = java.resolveSibling("started");
        Launcher launcher = launcher(work, cache, java);
        Process process = launcher.builder(List.of("setsid", HOME.resolve("bin/placement-audit").toString(), "store", "--help"))
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!Files.exists(started) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(started).as("the command started").exists();

        new ProcessBuilder("kill", "-INT", "--", "-" + process.pid()).inheritIO().start().waitFor();
        assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        Thread.sleep(jdk.settles());

        assertThat(process.exitValue()).as("the JVM's own exit code").isEqualTo(130);
        assertThat(files(cache)).as("nothing put in place, nothing left behind").isEmpty();
    }

    /**
     * A first command whose launcher was itself killed (kill -9 to the shell, a session's end) leaves what its JVM
     * wrote at exit under its per-process name, which no later run looks at. The next family's first command removes
     * such a file once nothing has written it for an hour, and leaves a younger one, which a command still ending may
     * be about to move into place.
     */
    @Test
    void aFirstCommandRemovesWhatAKilledLauncherLeftAnHourAgo(@TempDir Path work) throws Exception {
        Path java = StandIn.JDK17.write(work, """
                if [ -n "$written" ]; then printf 'an archive' > "$written"; fi
                """);
        Path cache = Files.createDirectories(work.resolve("cds"));
        Path stale = Files.writeString(cache.resolve("producer-123.jsa.4242.partial"), "half an archive");
        Path staleRecord = Files.writeString(cache.resolve("worker-123.aot.4243.partial.config"), "a record");
        Path young = Files.writeString(cache.resolve("collector-123.jsa.4244.partial"), "an archive being moved");
        FileTime twoHoursAgo = FileTime.fromMillis(System.currentTimeMillis() - Duration.ofHours(2).toMillis());
        Files.setLastModifiedTime(stale, twoHoursAgo);
        Files.setLastModifiedTime(staleRecord, twoHoursAgo);
        Files.setLastModifiedTime(young, FileTime.fromMillis(System.currentTimeMillis() - Duration.ofMinutes(5).toMillis()));

        Launcher.Run run = launcher(work, cache, java)
                .run(Duration.ofSeconds(30), "store", "--help");

        assertThat(run.exit()).as(run.toString()).isZero();
        assertThat(stale).as("an hour-old partial archive").doesNotExist();
        assertThat(staleRecord).as("an hour-old partial record").doesNotExist();
        assertThat(young).as("a partial file written five minutes ago").exists();
        assertThat(archives(cache)).as("the command's own archive").hasSize(1)
                .allMatch(f -> f.getFileName().toString().startsWith("store-"));
    }

    /**
     * An archive is flushed to disk before it is moved into place, so that a machine that loses power just after a
     * family's first command never finds half an archive under the name later commands map (JDK 17 dies of one, as
     * above). A {@code sync} on the PATH notes what it was asked to flush, and whether the archive was in place then.
     * On JDK 25 the cache, made in the background from the first command's record, is flushed the same way.
     */
    @ParameterizedTest
    @EnumSource(StandIn.class)
    void anArchiveIsOnDiskBeforeItIsPutInPlace(StandIn jdk, @TempDir Path work) throws Exception {
        // What is put in place: on 17 the archive the JVM writes as it exits; on 25 the cache the stand-in makes when asked.
        String made = jdk == StandIn.JDK25 ? "a cache" : "an archive";
        Path java = jdk.notingOptions(work);
        Path bin = Files.createDirectories(work.resolve("tools"));
        Path log = work.resolve("synced");
        Path sync = Files.writeString(bin.resolve("sync"), """
                #!/bin/sh
                if [ -e "${1%%.*.partial}" ]; then placed=yes; else placed=no; fi
                printf '%%s|%%s|%%s\n' "$1" "$placed" "$(cat "$1")" >> '%s'
                """.formatted(log));
        sync.toFile().setExecutable(true);
        Path cache = work.resolve("cds");

        Launcher.Run run = launcher(work, cache, java).withEnv(Map.of("PATH", bin + ":/usr/local/bin:/usr/bin:/bin"))
                .run(Duration.ofSeconds(30), "store", "--help");
        Thread.sleep(jdk.settles());

        assertThat(run.exit()).as(run.toString()).isZero();
        List<Path> placed = files(cache);
        assertThat(placed).as("the archive, in place").hasSize(1);
        List<String> synced = Files.readAllLines(log);
        assertThat(synced).as("flushed once").hasSize(1);
        assertThat(synced.get(0)).as("whole, under its own name, before it was put in place")
                .matches(Pattern.quote(placed.get(0).toString()) + "\\.\\d+\\.partial\\|no\\|" + made);
    }

    /**
     * An empty archive under the family's name (what a file system may leave of a file written just before the
     * machine crashed) is made again by the next command, as if missing: JDK 17 would run without it, silently, for good.
     */
    @Test
    void anEmptyArchiveIsMadeAgain(@TempDir Path work) throws Exception {
        Path java = StandIn.JDK17.notingOptions(work);
        Path cache = work.resolve("cds");
        Launcher launcher = launcher(work, cache, java);
        assertThat(launcher.run(Duration.ofSeconds(30), "store", "--help").exit()).isZero();
        Path archive = archives(cache).get(0);
        Files.delete(archive);
        Files.createFile(archive);

        assertThat(launcher.run(Duration.ofSeconds(30), "store", "--help").exit()).isZero();
        List<String> remaking = StandIn.options(java);
        assertThat(launcher.run(Duration.ofSeconds(30), "store", "--help").exit()).isZero();
        List<String> next = StandIn.options(java);

        assertThat(remaking).as("the empty archive is not mapped; a new one is made").noneMatch(o -> o.startsWith("-XX:SharedArchiveFile="))
                .anyMatch(o -> o.startsWith("-XX:ArchiveClassesAtExit="));
        assertThat(archive).hasContent("an archive");
        assertThat(next).as("and the next command maps it").contains("-XX:SharedArchiveFile=" + archive);
        assertThat(files(cache)).containsExactly(archive);
    }

    /**
     * An archive damaged on disk after it was made (a flipped byte in each of its pages past the first 64 KiB, as a
     * failing disk or a careless copy leaves it) is passed over: the command runs as without an archive, says nothing
     * of it, and leaves no crash report. JDK 17 maps such an archive unchecked and dies of it (SIGBUS, an
     * {@code hs_err_pid} file in the working folder) on every command of the family, until someone removes it.
     */
    @Test
    void anArchiveDamagedOnDiskIsPassedOverNotDiedOf(@TempDir Path work) throws Exception {
        Path cache = work.resolve("cds");
        Launcher launcher = Launcher.of(HOME, work).withEnv(Map.of("PA_CDS_DIR", cache.toString()));
        Launcher.Run first = launcher.run(Duration.ofSeconds(30), "store", "--help");
        Path archive = archives(cache).get(0);
        byte[] bytes = Files.readAllBytes(archive);
        for (int at = 64 * 1024; at < bytes.length; at += 4096) {
            bytes[at] ^= (byte) 0xFF;
        }
        archive.toFile().setWritable(true, true);
        Files.write(archive, bytes);

        Launcher.Run damaged = launcher.run(Duration.ofSeconds(30), "store", "--help");

        assertThat(first.exit()).as(first.toString()).isZero();
        assertThat(bytes.length).as("an archive of some size").isGreaterThan(1 << 20);
        assertThat(damaged.exit()).as(damaged.toString()).isZero();
        assertThat(damaged.out()).isEqualTo(first.out());
        assertThat(damaged.err()).isEmpty();
        try (Stream<Path> left = Files.list(work)) {
            assertThat(left.map(f -> f.getFileName().toString())).as("no JVM crash report").noneMatch(f -> f.startsWith("hs_err"));
        }
    }

    /**
     * An archive serves only the JVM that made it: a JVM updated in place (same path, another file) gets an archive of
     * its own rather than one the old JVM made, which the new one would refuse or, damaged, die of. A stand-in for java
     * notes the options it was given and writes an archive where it is told to.
     */
    @Test
    void aJvmUpdatedInPlaceGetsAnArchiveOfItsOwn(@TempDir Path work) throws Exception {
        Path java = StandIn.JDK17.notingOptions(work);
        Path cache = work.resolve("cds");
        Launcher launcher = launcher(work, cache, java);

        assertThat(launcher.run(Duration.ofSeconds(30), "store", "--help").exit()).isZero();
        List<Path> first = files(cache);
        assertThat(launcher.run(Duration.ofSeconds(30), "store", "--help").exit()).isZero();
        List<String> second = StandIn.options(java);
        // The update: another java at the same path (a longer file, another time).
        Files.writeString(java, Files.readString(java) + "# updated\n");
        Files.setLastModifiedTime(java, FileTime.fromMillis(System.currentTimeMillis() + 60_000));
        assertThat(launcher.run(Duration.ofSeconds(30), "store", "--help").exit()).isZero();
        List<String> updated = StandIn.options(java);

        assertThat(first).hasSize(1);
        assertThat(second).as("the same JVM maps its archive").contains("-XX:SharedArchiveFile=" + first.get(0));
        assertThat(updated).as("the updated JVM makes its own").noneMatch(o -> o.startsWith("-XX:SharedArchiveFile="))
                .anyMatch(o -> o.startsWith("-XX:ArchiveClassesAtExit="));
        assertThat(files(cache)).hasSize(2).contains(first.get(0));
    }

    /**
     * A stand-in for java: a shell script in a home whose release file says {@code release} (none: the launcher takes
     * it for 17). Before its body runs, {@code $written} holds the file a JVM of that release writes as it exits when
     * the launcher asks it to ({@code option}: the archive on 17, the record of classes on 25), or is empty. Asked to
     * make an AOT cache (AOTMode=create) it makes one, so a launcher that asked would leave one.
     */
    private enum StandIn {
        JDK17(null, "-XX:ArchiveClassesAtExit="),
        JDK25("25", "-XX:AOTConfiguration=");

        private final String release;
        private final String option;

        StandIn(String release, String option) {
            this.release = release;
            this.option = option;
        }

        Path write(Path work, String body) throws Exception {
            Path bin = Files.createDirectories(work.resolve("jdk/bin"));
            if (release != null) {
                Files.writeString(bin.resolveSibling("release"), "JAVA_VERSION=\"" + release + ".0.1\"\n");
            }
            Path java = Files.writeString(bin.resolve("java"), """
                    #!/bin/sh
                    written=
                    for arg in "$@"; do
                      case "$arg" in
                        -XX:AOTCache=*) printf 'a cache' > "${arg#-XX:AOTCache=}"; exit 0 ;;
                        %s*) written="${arg#%s}" ;;
                      esac
                    done
                    """.formatted(option, option) + body);
            java.toFile().setExecutable(true);
            return java;
        }

        /** One that notes the options it was given ({@link #options}) and writes what it is told to write. */
        Path notingOptions(Path work) throws Exception {
            return write(work, """
                    printf '%s\\n' "$@" > "$(dirname "$0")/options"
                    if [ -n "$written" ]; then printf 'an archive' > "$written"; fi
                    """);
        }

        /** The options the last run of a stand-in made by {@link #notingOptions} was given, one a line. */
        static List<String> options(Path java) throws Exception {
            return Files.readAllLines(java.resolveSibling("options"));
        }

        /** How long after the command ends what it wrote would be in place: on 25 a cache is made in the background. */
        long settles() {
            return release == null ? 200 : 2_000;
        }
    }

    /** The distribution's launcher with this stand-in for java and this cache folder. */
    private static Launcher launcher(Path work, Path cache, Path java) {
        return Launcher.of(HOME, work).withEnv(Map.of("PA_CDS_DIR", cache.toString(), "PA_JAVA", java.toString()));
    }

    /** Waits (at most 60 s) until the cache folder holds one file and no JVM is making a cache into it. */
    private static void awaitOnly(Path cache) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline && (files(cache).size() != 1 || makingCacheIn(cache))) {
            Thread.sleep(100);
        }
    }

    /** A JVM the launcher started to make an AOT cache into this folder (AOTMode=create) is still running. */
    private static boolean makingCacheIn(Path cache) {
        String into = "-XX:AOTCache=" + cache;
        return ProcessHandle.allProcesses().anyMatch(p -> p.info().arguments()
                .map(args -> Stream.of(args).anyMatch(a -> a.startsWith(into))).orElse(false));
    }

    private static boolean cacheDone(Path cache) throws Exception {
        List<Path> all = files(cache);
        return !all.isEmpty() && all.stream().allMatch(f -> f.toString().endsWith(".aot"));
    }

    @Test
    void onJdk25ACacheItCannotWriteOrCdsOffChangesNothingAUserSees(@TempDir Path work) throws Exception {
        cannotWriteOrOffChangesNothing(work, Map.of("PA_JAVA", newerJava().toString()), "Java 25");
    }

    /** The cache a family's first run left to be made in the background, once it is there (at most 60 s). */
    private static Path awaitCache(Path cache, String family) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            List<Path> made = files(cache).stream().filter(f -> f.getFileName().toString().startsWith(family))
                    .filter(f -> f.toString().endsWith(".aot")).toList();
            if (!made.isEmpty() && files(cache).size() == made.size()) {
                return made.get(0);
            }
            Thread.sleep(50);
        }
        throw new AssertionError("no " + family + "*.aot made in " + cache + " within 60 s: " + files(cache));
    }

    /**
     * A JDK 25 or later, whose launcher path is an AOT cache: {@code PA_TEST_NEWER_JAVA}, else the first under
     * /usr/lib/jvm (this project's machines have Temurin's 25 beside the default 17). Missing in CI, the test fails.
     */
    private static Path newerJava() throws Exception {
        String given = System.getenv("PA_TEST_NEWER_JAVA");
        if (given != null && !given.isBlank()) {
            return Path.of(given);
        }
        Path jvms = Path.of("/usr/lib/jvm");
        if (Files.isDirectory(jvms)) {
            try (Stream<Path> homes = Files.list(jvms)) {
                for (Path home : homes.sorted().toList()) {
                    Path release = home.resolve("release");
                    if (Files.isRegularFile(release) && Files.isExecutable(home.resolve("bin/java"))) {
                        Matcher m = Pattern.compile("(?m)^JAVA_VERSION=\"(\\d+)").matcher(Files.readString(release));
                        if (m.find() && Integer.parseInt(m.group(1)) >= 25) {
                            return home.resolve("bin/java");
                        }
                    }
                }
            }
        }
        String why = "no JDK 25 or later: set PA_TEST_NEWER_JAVA to its bin/java, or install one under /usr/lib/jvm";
        if ("true".equals(System.getenv("CI"))) {
            throw new AssertionError(why);
        }
        Assumptions.abort(why);
        return null;
    }

    private static List<Path> files(Path dir) throws Exception {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile).toList();
        }
    }

    private static List<Path> archives(Path dir) throws Exception {
        return files(dir).stream().filter(f -> f.getFileName().toString().endsWith(".jsa")).toList();
    }
}
