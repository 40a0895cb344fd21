package dev.placementaudit.store.cli;

import dev.placementaudit.store.cli.AuditStoreCli.Common;
import dev.placementaudit.store.replay.ProjectionRebuild;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.util.concurrent.Callable;

@Command(name = "rebuild", mixinStandardHelpOptions = true,
        description = "Rebuild the projection from the decision log into <schema>_rebuild, prove it equal to the live one, "
                + "and (with --swap) make it live. Interrupt and rerun at will: it resumes.")
final class RebuildCommand implements Callable<Integer> {
    @Mixin Common common = new Common();
    @Option(names = "--swap", description = "replace the live projection once proven equal") boolean swap;
    @Option(names = "--force", description = "swap even if different (after a deliberate change to the projection)") boolean force;
    @Option(names = "--stop-after", paramLabel = "N", defaultValue = "9223372036854775807", description = "replay at most N records this run (default: all)")
    long stopAfter;

    @Override
    public Integer call() throws Exception {
        common.requirePositive("--stop-after", stopAfter);
        // With --format json, stdout carries only the result; the progress goes to stderr.
        PrintWriter progress = common.progress();
        var result = new ProjectionRebuild(common.storeConfig(), progress).run(stopAfter, swap, force);
        if (common.json()) {
            common.printJson(result);
        }
        return result.equal() || result.swapped() ? 0 : 3;
    }
}
