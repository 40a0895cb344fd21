package dev.placementaudit.cli;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The tarball as a user gets it: unpacked somewhere else, run from there with a clean environment (no Maven, no
 * JAVA_HOME, no variable of this build), needing nothing but a Java runtime on the PATH.
 */
class DistributionIT {
    @TempDir
    static Path unpacked;
    static Path home;

    @BeforeAll
    static void unpackTheTarball() throws Exception {
        Path tarball = Path.of(System.getProperty("pa.dist.tarball"));
        assertThat(tarball).exists();
        Process tar = new ProcessBuilder("tar", "-xzf", tarball.toString(), "-C", unpacked.toString()).inheritIO().start();
        assertThat(tar.waitFor()).isZero();
        try (Stream<Path> top = Files.list(unpacked)) {
            home = top.filter(p -> p.getFileName().toString().startsWith("placement-audit-")).findFirst().orElseThrow();
        }
    }

    private Launcher launcher(Path workDir) {
        return Launcher.of(home, workDir);
    }

    @Test
    void printsItsVersionFromACleanEnvironment(@TempDir Path work) throws Exception {
        Launcher.Run run = launcher(work).run(Duration.ofSeconds(20), "--version");

        assertThat(run.exit()).as(run.toString()).isZero();
        assertThat(run.out()).startsWith("placement-audit " + home.getFileName().toString().substring("placement-audit-".length()));
        assertThat(run.err()).as(run.toString()).isEmpty();
    }

    @Test
    void explainsTheSampleModelItWrites(@TempDir Path work) throws Exception {
        Launcher launcher = launcher(work);

        Launcher.Run written = launcher.run(Duration.ofSeconds(30), "producer", "sample-model", "--layout", "llama-3.2-1b-q4km", "--out", "model.gguf");
        Launcher.Run explained = launcher.run(Duration.ofSeconds(30), "producer", "explain", "--model", "model.gguf", "--profile", "edge",
                "--platform", "android", "--kernels", "Q4_K");

        assertThat(written.exit()).as(written.toString()).isZero();
        assertThat(written.out()).contains("wrote model.gguf").contains("146 tensors");
        assertThat(Files.size(work.resolve("model.gguf"))).isGreaterThan(800_000_000L);
        assertThat(explained.exit()).as(explained.toString()).isZero();
        assertThat(explained.out()).contains("Llama 3.2 1B Instruct Q4_K_M: 146 tensors").contains("MMAP_FILE").contains("HOST_OFFHEAP")
                .contains("re-encoded at load (Float32/Q6_K -> Float32/Dense(4B))");
    }

    /** llama.cpp from the distribution, as docs/runtimes.md types it: the native library ships in its jars, nothing else installed. */
    @Test
    void loadsATinyLlamaThroughRealLlamaCppFromTheDistribution(@TempDir Path work) throws Exception {
        Launcher launcher = launcher(work);

        Launcher.Run written = launcher.run(Duration.ofSeconds(30), "producer", "sample-model", "--layout", "tiny-llama", "--type", "Q4_0",
                "--with-weights", "--out", "tiny.gguf");
        Launcher.Run explained = launcher.run(Duration.ofSeconds(30), "producer", "explain", "--model", "tiny.gguf", "--runtime", "llama.cpp",
                "--cpu", "arm-i8mm");
        Launcher.Run loaded = launcher.run(Duration.ofSeconds(60), "producer", "load", "--model", "tiny.gguf", "--runtime", "llama.cpp",
                "--generate", "4");
        Launcher.Run refused = launcher.run(Duration.ofSeconds(30), "producer", "load", "--model", "model.gguf", "--runtime", "llama.cpp");

        assertThat(written.exit()).as(written.toString()).isZero();
        assertThat(explained.exit()).as(explained.toString()).isZero();
        assertThat(explained.out()).contains("llama.cpp b4916 on arm-i8mm, mmap on").contains("repacked as q4_0_4x8 for arm-i8mm");
        assertThat(loaded.exit()).as(loaded.toString()).isZero();
        assertThat(loaded.out()).contains("through llama.cpp b4916").contains("generated ")
                .contains("as planned: every buffer and every repack as the llama.cpp b4916 policy says");
        assertThat(refused.exit()).as(refused.toString()).isEqualTo(2);
        assertThat(refused.err()).startsWith("error: no model file at model.gguf").doesNotContain("\tat ");
    }

    @Test
    void explainsASafetensorsSampleWithHuggingFaceNames(@TempDir Path work) throws Exception {
        Launcher launcher = launcher(work);

        Launcher.Run written = launcher.run(Duration.ofSeconds(30), "producer", "sample-model", "--layout", "qwen2.5-0.5b-q8_0", "--out",
                "qwen.safetensors");
        Launcher.Run explained = launcher.run(Duration.ofSeconds(30), "producer", "explain", "--model", "qwen.safetensors", "--all");

        assertThat(written.exit()).as(written.toString()).isZero();
        assertThat(written.out()).contains("SAFETENSORS layout of Qwen2.5 0.5B Instruct Q8_0, 290 tensors");
        assertThat(explained.exit()).as(explained.toString()).isZero();
        assertThat(explained.out()).contains("290 tensors").contains("model.layers.23.mlp.down_proj.weight").contains("model.embed_tokens.weight");
    }

    @Test
    void refusesToOverwriteAFileUnlessForced(@TempDir Path work) throws Exception {
        Files.writeString(work.resolve("precious.gguf"), "not a sample");
        Launcher launcher = launcher(work);

        Launcher.Run refused = launcher.run(Duration.ofSeconds(30), "producer", "sample-model", "--layout", "smollm2-360m-f16", "--out", "precious.gguf");

        assertThat(refused.exit()).isEqualTo(2);
        assertThat(refused.err()).startsWith("error: precious.gguf exists; pass --force to overwrite it");
        assertThat(Files.readString(work.resolve("precious.gguf"))).isEqualTo("not a sample");
    }

    @Test
    void shipsCommentedConfigurationAndNoTestLibraries() throws Exception {
        assertThat(home.resolve("conf/worker.properties")).content().contains("#worker.instance.id=");
        assertThat(home.resolve("conf/store.properties")).content().contains("#store.jdbc.url=");
        assertThat(Files.isExecutable(home.resolve("bin/placement-audit"))).isTrue();
        List<String> jars;
        try (Stream<Path> lib = Files.list(home.resolve("lib"))) {
            jars = lib.map(p -> p.getFileName().toString()).toList();
        }
        assertThat(jars).anyMatch(j -> j.startsWith("kafka_2.13-")).anyMatch(j -> j.startsWith("postgresql-"));
        assertThat(jars).noneMatch(j -> j.startsWith("junit-") || j.startsWith("testcontainers-") || j.startsWith("awaitility-")
                || j.startsWith("assertj-"));
    }
}
