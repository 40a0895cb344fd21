package dev.placementaudit.store.cli;

import dev.placementaudit.core.format.TensorEncodings;
import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.store.cli.AuditStoreCli.Common;
import dev.placementaudit.store.cli.AuditStoreCli.LoadFilter;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.replay.PreShipGate;
import dev.placementaudit.resolution.llamacpp.CpuFeatures;
import dev.placementaudit.store.replay.WhatIf;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

@Command(name = "whatif", mixinStandardHelpOptions = true,
        description = "Re-resolve historical model loads under a candidate policy and report what would move. Writes nothing.")
final class WhatIfCommand implements Callable<Integer> {
    @Mixin Common common = new Common();
    @Option(names = "--loads-topic", defaultValue = "model-loads", description = "the topic of recorded model loads (default: ${DEFAULT-VALUE})")
    String loadsTopic;
    @Option(names = "--from", defaultValue = "1970-01-01T00:00:00Z", description = "ISO instant (default: the beginning)") Instant from;
    @Option(names = "--to", description = "ISO instant (default: now)") Instant to;
    @Mixin LoadFilter filter = new LoadFilter();
    @Option(names = "--threshold", description = "candidate off-heap threshold in bytes") Long threshold;
    @Option(names = "--servable", split = ",", description = "candidate mapped-servable encodings, e.g. Q4_K,Q6_K,Dense(4B)") List<String> servable;
    @Option(names = "--offheap", description = "candidate off-heap support (true/false)") Boolean offHeap;
    @Option(names = "--mapped-files", description = "candidate file mapping support (true/false)") Boolean mappedFiles;
    @Option(names = "--cpu", description = "llama.cpp loads re-planned for this CPU: avx2, x86-sse, arm-dotprod, arm-i8mm, arm-sve256 (before "
            + "moving a fleet to ARM servers, say)") String cpu;
    @Option(names = "--no-mmap", description = "llama.cpp loads re-planned with mmap off (every weight copied)") boolean noMmap;
    @Option(names = "--tensors", defaultValue = "20", description = "tensor changes to list in the table (default: ${DEFAULT-VALUE})") int tensors;
    @Option(names = "--gate", description = "a pre-ship gate: re-plan each deployment's latest load under the candidate and exit 1 if that "
            + "would open an incident the fleet does not have open today (exit 0 otherwise)") boolean gate;

    /** The what-if report and, with --gate, the gate's verdict. */
    record Gated(WhatIf.Report whatIf, PreShipGate.Verdict gate) {
    }

    @Override
    public Integer call() throws Exception {
        common.requirePositive("--tensors", tensors);
        StoreConfig config = common.storeConfig();
        // The what-if's own consumer says, in one line and within the bound, that the broker or the topic is not there.
        common.requireKafka("whatif re-plans the loads recorded on " + loadsTopic, "");
        WhatIf.Query query = query();
        // The log first: a broker or topic that is not there is said before the store is opened.
        List<ConsumerRecord<byte[], byte[]>> recorded = WhatIf.read(config.kafka(), loadsTopic, config.connectTimeout(), query);
        if (gate) {
            return gated(config, query, recorded);
        }
        return common.show(db -> new WhatIf(db.dataSource(), config.kafka(), loadsTopic,
                config.connectTimeout()).run(query, recorded), this::print);
    }

    private void print(PrintWriter o, WhatIf.Report report) {
        o.println(report.summary());
        report.deployments().forEach(d -> o.printf(Locale.ROOT, "  %-16s %4d loads  %6d unchanged  %6d changed  %6d new  %s%n",
                d.deploymentId(), d.loads(), d.unchanged(), d.changed(), d.added(), WhatIf.deltas(d.deltaByDomain())));
        report.changes().stream().limit(tensors).forEach(t -> o.printf(Locale.ROOT, "  %-9s %-16s %-32s %s -> %s  %s%n",
                t.change(), t.deploymentId(), t.tensorName(), t.beforeDomain(), t.afterDomain(), ByteSizes.format(t.residentBytes())));
    }

    /** The report, then the gate's verdict; 1 when the candidate would open an incident the fleet does not have open. */
    private int gated(StoreConfig config, WhatIf.Query query, List<ConsumerRecord<byte[], byte[]>> recorded) throws Exception {
        Gated result;
        try (AuditDatabase db = common.open()) {
            WhatIf whatIf = new WhatIf(db.dataSource(), config.kafka(), loadsTopic, config.connectTimeout());
            WhatIf.Report report = whatIf.run(query, recorded);
            PreShipGate.Verdict verdict = new PreShipGate(db.dataSource(), config.offHeapGrowth(), config.heapGrowth())
                    .check(query.candidate().describe(), whatIf.latestUnderCandidate(query, recorded));
            result = new Gated(report, verdict);
        }
        if (common.json()) {
            common.printJson(result);
        } else {
            PrintWriter o = common.out();
            print(o, result.whatIf());
            PreShipGate.Verdict v = result.gate();
            o.printf(Locale.ROOT, "gate: %s - of %d deployments' latest loads, %d would be planned differently; %d cause(s) would open a new "
                    + "incident%n", v.pass() ? "pass" : "BLOCKED", v.loads(), v.replanned(), v.fresh().size());
            for (PreShipGate.WouldOpen w : v.wouldOpen()) {
                o.printf(Locale.ROOT, "  %s %s %s -> candidate  %s  on %d deployment(s), %s moved%n", w.openIncident() == null ? "NEW  " : "known",
                        w.modelId(), w.fromRelease(), w.primaryKind(), w.deployments().size(), ByteSizes.format(w.bytesMoved()));
                o.printf(Locale.ROOT, "      why: %s%s%n", w.cause(), w.openIncident() == null ? "" : " (open today as " + w.openIncident() + ")");
            }
        }
        return result.gate().pass() ? 0 : GateCommand.BLOCKED;
    }

    WhatIf.Query query() {
        return new WhatIf.Query(from, to == null ? Instant.now() : to, filter.deployment, filter.model,
                new WhatIf.CandidatePolicy(
                        threshold == null ? OptionalLong.empty() : OptionalLong.of(threshold),
                        servable == null ? Optional.empty() : Optional.of(servable.stream()
                                .map(TensorEncodings::parseKnown).collect(Collectors.toSet())),
                        Optional.ofNullable(offHeap), Optional.ofNullable(mappedFiles), Optional.ofNullable(cpu).map(this::cpu),
                        noMmap ? Optional.of(false) : Optional.empty()));
    }

    private CpuFeatures cpu(String name) {
        try {
            return CpuFeatures.named(name);
        } catch (IllegalArgumentException e) {
            throw common.usage(e.getMessage());
        }
    }
}
