package dev.placementaudit.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
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
        Path readOnly = Files.createDirectory(work.resolve("read-only"));
        Path file = Files.writeString(work.resolve("not-a-directory"), "x");
        readOnly.toFile().setWritable(false, false);
        try {
            for (Map<String, String> env : List.of(Map.of("PA_CDS_DIR", file.resolve("cds").toString()), Map.of("PA_CDS", "off"),
                    Map.of("PA_CDS_DIR", readOnly.resolve("cds").toString()))) {
                Launcher.Run run = Launcher.of(HOME, work).withEnv(env).run(Duration.ofSeconds(30), "--version");

                assertThat(run.exit()).as(env + ": " + run).isZero();
                assertThat(run.out()).as(env.toString()).startsWith("placement-audit ");
                assertThat(run.err()).as(env.toString()).isEmpty();
            }
            assertThat(archives(work.resolve(".cache"))).as("PA_CDS=off writes no archive to the default cache").isEmpty();
        } finally {
            readOnly.toFile().setWritable(true, false);
        }
    }

    private static List<Path> archives(Path dir) throws Exception {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(f -> f.getFileName().toString().endsWith(".jsa")).toList();
        }
    }
}
