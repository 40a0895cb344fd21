package dev.placementaudit.producer.cli;

import dev.placementaudit.events.LoadObserved;
import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.events.TensorInfo;
import dev.placementaudit.producer.llamacpp.LlamaCppProbe;
import dev.placementaudit.schemas.EventSerde;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TopicReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static dev.placementaudit.producer.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The llama.cpp commands as a user types them: write a tiny llama, explain it for two CPUs, load it through llama.cpp. */
class LlamaCppCliTest {
    @TempDir
    Path dir;

    @Test
    void writeExplainAndLoadATinyLlamaThroughRealLlamaCpp() {
        Path model = dir.resolve("tiny-q4_0.gguf");
        CliRun wrote = run("sample-model", "--layout", "tiny-llama", "--type", "Q4_0", "--with-weights", "--out", model.toString());
        assertThat(wrote.exit()).as(wrote.err()).isZero();
        assertThat(wrote.out()).startsWith("wrote " + model + ": a tiny llama in Q4_0 with weights (seed 1), 21 tensors");

        CliRun avx2 = run("explain", "--model", model.toString(), "--runtime", "llama.cpp", "--cpu", "avx2", "--all");
        assertThat(avx2.exit()).as(avx2.err()).isZero();
        assertThat(avx2.out()).contains("llama.cpp b4916 on avx2, mmap on")
                .containsPattern("CPU_AARCH64 +864 KB +HOST_OFFHEAP")
                .containsPattern("output.weight +Q4_0 +144 KB -> CPU_AARCH64 +repacked as q4_0_8x8 for avx2")
                .containsPattern("token_embd.weight +Q4_0 +144 KB -> CPU_Mapped +read by row \\(get_rows\\)");
        CliRun arm = run("explain", "--model", model.toString(), "--runtime", "llama.cpp", "--cpu", "arm-i8mm", "--all");
        assertThat(arm.out()).containsPattern("blk.0.attn_q.weight +Q4_0 .* repacked as q4_0_4x8 for arm-i8mm");

        CliRun versus = run("explain", "--model", model.toString(), "--runtime", "llama.cpp", "--cpu", "avx2", "--versus", "x86-sse");
        assertThat(versus.exit()).as(versus.err()).isZero();
        assertThat(versus.out()).contains("llama.cpp b4916 on avx2 versus x86-sse, mmap on")
                .containsPattern("CPU_AARCH64 +864 KB +0 B").contains("15 weights placed differently, 864 KB changing domain")
                .containsPattern("output.weight +Q4_0 +144 KB  CPU_AARCH64 \\(q4_0_8x8\\) -> CPU_Mapped");
        CliRun versusJson = run("explain", "--model", model.toString(), "--runtime", "llama.cpp", "--cpu", "avx2", "--versus", "x86-sse",
                "--format", "json");
        assertThat(versusJson.exit()).as(versusJson.err()).isZero();
        assertThat(versusJson.out()).contains("\"weightsPlacedDifferently\" : 15").contains("\"bytesChangingDomain\" : " + (864 << 10))
                .contains("\"versus\" : \"x86-sse\"");
        CliRun planJson = run("explain", "--model", model.toString(), "--runtime", "llama.cpp", "--format", "json");
        assertThat(planJson.out()).contains("\"build\" : \"b4916\"").contains("\"layout\" : \"q4_0_8x8\"")
                .contains("\"reason\" : \"repacked as q4_0_8x8 for avx2 (CPU_AARCH64)\"");
        CliRun sameBytes = run("explain", "--model", model.toString(), "--runtime", "llama.cpp", "--cpu", "avx2", "--versus", "arm-dotprod");
        assertThat(sameBytes.out()).contains("15 weights placed differently, 0 B changing domain").contains("CPU_AARCH64 (q4_0_4x4)");

        CliRun load = run("load", "--model", model.toString(), "--runtime", "llama.cpp", "--generate", "3");
        assertThat(load.exit()).as(load.err()).isZero();
        assertThat(load.out()).contains("through llama.cpp b4916").containsPattern("CPU_AARCH64 +HOST_OFFHEAP +864 KB +0.84 MiB\\n")
                .containsPattern("CPU_Mapped +MMAP_FILE .* 0.85 MiB\\n").contains("repacked as q4_0_8x8: 864 KB")
                .contains("generated ").contains("as planned: every buffer and every repack as the llama.cpp b4916 policy says");
    }

    @Test
    void mistakesGetOneLineAndTheRightExitCode() throws Exception {
        CliRun type = run("sample-model", "--layout", "tiny-llama", "--type", "Q5_K", "--out", dir.resolve("m.gguf").toString());
        assertThat(type.exit()).isEqualTo(2);
        assertThat(type.err().strip()).isEqualTo("error: a tiny llama is written in Q4_0, Q4_K, Q8_0 or F16, not 'Q5_K'");

        CliRun cpu = run("explain", "--model", dir.resolve("m.gguf").toString(), "--runtime", "llama.cpp", "--cpu", "z80");
        assertThat(cpu.exit()).isEqualTo(2);

        Path broken = dir.resolve("broken.gguf");
        Files.write(broken, new byte[]{'G', 'G', 'U', 'F', 3, 0, 0, 0});
        CliRun refused = run("load", "--model", broken.toString(), "--runtime", "llama.cpp");
        assertThat(refused.exit()).isEqualTo(2);
        assertThat(refused.err()).startsWith("error: llama.cpp refused " + broken + ": ").doesNotContain("\tat ");
        assertThat(refused.out()).isEmpty();
    }

    /** A llama.cpp process this project did not start, observed from outside, then gone. */
    @Test
    void observeAProcessHoldingAModelThroughItsProcFilesAndItsLog() throws Exception {
        Path model = dir.resolve("tiny-q4_0.gguf");
        assertThat(run("sample-model", "--layout", "tiny-llama", "--type", "Q4_0", "--with-weights", "--out", model.toString()).exit()).isZero();
        Path log = dir.resolve("llama.log");
        Process server = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(), "-cp", System.getProperty("java.class.path"),
                LlamaCppProbe.class.getName(), model.toString(), "--hold").redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            await().atMost(Duration.ofSeconds(60)).until(() -> Files.readString(log).contains(LlamaCppProbe.READY));

            CliRun seen = run("observe", "--runtime", "llama.cpp", "--pid", Long.toString(server.pid()), "--model", model.toString(),
                    "--log", log.toString());
            assertThat(seen.exit()).as(seen.err()).isZero();
            assertThat(seen.out()).startsWith("process " + server.pid() + " holding tiny-q4_0.gguf: llama.cpp b4916 policy, mmap on, CPU ")
                    .containsPattern("CPU_AARCH64 +HOST_OFFHEAP +864 KB +0.84 MiB\\n").containsPattern("file pages resident [1-9]")
                    .contains("finding: ").contains("as planned: every buffer and every repack");

            CliRun memoryOnly = run("observe", "--runtime", "llama.cpp", "--pid", Long.toString(server.pid()), "--model", model.toString());
            assertThat(memoryOnly.exit()).isZero();
            assertThat(memoryOnly.out()).contains("(--cpu)").contains("no log given: buffers and repacks were not checked (--log FILE)");
        } finally {
            server.getOutputStream().close();
            assertThat(server.waitFor(30, TimeUnit.SECONDS)).isTrue();
        }
        CliRun gone = run("observe", "--runtime", "llama.cpp", "--pid", Long.toString(server.pid()), "--model", model.toString());
        assertThat(gone.exit()).isEqualTo(2);
        assertThat(gone.err().strip()).startsWith("error: no llama.cpp process " + server.pid() + " to observe: ");
    }

    /** {@code load --runtime llama.cpp --publish}: the load names llama.cpp, its build and CPU, with each weight as llama.cpp placed it. */
    @Test
    @ExtendWith(KafkaBrokerExtension.class)
    void loadThroughLlamaCppAndPublishWhatItDidToKafka(KafkaBroker broker) throws Exception {
        Path model = dir.resolve("tiny-q4_0.gguf");
        assertThat(run("sample-model", "--layout", "tiny-llama", "--type", "Q4_0", "--with-weights", "--out", model.toString()).exit()).isZero();
        String loads = KafkaBroker.uniqueTopic("loads");
        String observations = KafkaBroker.uniqueTopic("observations");
        broker.createTopics(1, loads, observations);

        CliRun load = run("load", "--model", model.toString(), "--runtime", "llama.cpp", "--deployment", "llama-box-1", "--release", "r2",
                "--model-id", "tiny-llama", "--publish", "--bootstrap-servers", broker.bootstrapServers(), "--topic", loads, "--observations-topic",
                observations);

        assertThat(load.exit()).as(load.err()).isZero();
        assertThat(load.out()).contains("as planned: every buffer and every repack")
                .contains("with llama.cpp's placements to " + loads + "-0@0 and its observation to " + observations + "-0@0");
        ModelLoaded published = EventSerde.of(ModelLoaded.class).decode(TopicReader.readCommitted(broker, loads, 1).get(0).value());
        assertThat(published.getRuntime().getName()).isEqualTo("llama.cpp");
        assertThat(published.getRuntime().getBuild()).isEqualTo("b4916");
        assertThat(published.getRuntime().getMmap()).isTrue();
        assertThat(published.getRuntime().getCpuFeatures()).contains("AARCH64_REPACK");
        assertThat(published.getPlatform().getName()).isEqualTo("native");
        assertThat(published.getProfile().getName()).isEqualTo("llama.cpp");
        assertThat(published.getModel().getId()).isEqualTo("tiny-llama");
        TensorInfo embedding = published.getTensors().stream().filter(t -> t.getName().equals("token_embd.weight")).findFirst().orElseThrow();
        assertThat(embedding.getRuntime().getDomain().name()).isEqualTo("MMAP_FILE");
        assertThat(published.getTensors()).filteredOn(t -> t.getRuntime().getDomain().name().equals("HOST_OFFHEAP"))
                .as("the weights llama.cpp's log says it repacked").hasSize(15)
                .allSatisfy(t -> assertThat(t.getRuntime().getReason()).startsWith("CPU_AARCH64: repack with q4_0_"));
        LoadObserved observed = EventSerde.of(LoadObserved.class).decode(TopicReader.readCommitted(broker, observations, 1).get(0).value());
        assertThat(observed.getLoadId()).isEqualTo(published.getLoadId());
        assertThat(observed.getMethod().getName()).isEqualTo("llama.cpp-log+proc-smaps");
        assertThat(observed.getFileMappedBytes()).isPositive();
        assertThat(observed.getDirectAfterBytes()).as("no JVM pool: llama.cpp allocates natively").isNull();

        CliRun profile = run("load", "--model", model.toString(), "--runtime", "llama.cpp", "--profile", "edge");
        assertThat(profile.exit()).isEqualTo(2);
        assertThat(profile.err().strip()).isEqualTo("error: --profile is SKaiNET's; llama.cpp plans by its own rules (--no-mmap for a load without the mapping)");
    }
}
