package dev.placementaudit.producer.cli;

import dev.placementaudit.producer.llamacpp.LlamaCppAudit;
import dev.placementaudit.producer.llamacpp.LlamaCppObservation;
import dev.placementaudit.producer.llamacpp.ProcessMemory;
import dev.placementaudit.service.cli.CommandFailure;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.Callable;

@Command(name = "observe", mixinStandardHelpOptions = true,
        description = {"Observe a running llama.cpp process you did not start (llama-server, a service built on llama.cpp): its memory "
                + "from /proc/PID, its log from --log when given, held per buffer against the llama.cpp policy.",
                "Nothing in the process changes: it is read, not attached to."})
final class ObserveCommand implements Callable<Integer> {
    @Mixin ModelFileOption model = new ModelFileOption();

    @Mixin LlamaCppOptions llamaCpp = new LlamaCppOptions();

    @Option(names = "--pid", required = true, paramLabel = "PID", description = "the llama.cpp process") long pid;

    @Option(names = "--log", paramLabel = "FILE", description = "the process's log (llama.cpp's lines: buffer sizes, repacks, system_info); "
            + "without it only its memory is held against the plan") Path log;

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        if (!llamaCpp.llamaCpp()) {
            throw new CommandFailure("observe watches llama.cpp processes: pass --runtime llama.cpp");
        }
        if (log != null && !Files.isReadable(log)) {
            throw new CommandFailure("cannot read the log " + log);
        }
        if (!Files.isDirectory(Path.of("/proc"))) {
            throw new CommandFailure("observe reads /proc/PID: this platform has no /proc");
        }
        LlamaCppAudit audit;
        try {
            audit = LlamaCppObservation.observe(pid, model.file, Optional.ofNullable(log), llamaCpp.cpuFeatures());
        } catch (ProcessMemory.ProcessGone e) {
            throw new CommandFailure("no llama.cpp process " + pid + " to observe: " + e.getMessage());
        } catch (UncheckedIOException e) {
            throw new CommandFailure(e.getMessage() + ": " + e.getCause().getMessage(), e);
        }
        llamaCpp.printObservation(spec.commandLine().getOut(), pid, model.file, audit, log != null);
        return 0;
    }
}
