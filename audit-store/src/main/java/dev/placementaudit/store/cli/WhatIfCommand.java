package dev.placementaudit.store.cli;

import dev.placementaudit.core.format.TensorEncodings;
import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.service.cli.KafkaReachability;
import dev.placementaudit.store.cli.AuditStoreCli.Common;
import dev.placementaudit.store.cli.AuditStoreCli.LoadFilter;
import dev.placementaudit.store.cli.AuditStoreCli.Query;
import dev.placementaudit.store.config.StoreConfig;
import dev.placementaudit.store.replay.WhatIf;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

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
    @Mixin
    Common common = new Common();
    @Option(names = "--loads-topic", defaultValue = "model-loads", description = "the topic of recorded model loads (default: ${DEFAULT-VALUE})")
    String loadsTopic;
    @Option(names = "--from", defaultValue = "1970-01-01T00:00:00Z", description = "ISO instant (default: the beginning)")
    Instant from;
    @Option(names = "--to", description = "ISO instant (default: now)")
    Instant to;
    @Mixin
    LoadFilter filter = new LoadFilter();
    @Option(names = "--threshold", description = "candidate off-heap threshold in bytes")
    Long threshold;
    @Option(names = "--servable", split = ",", description = "candidate mapped-servable encodings, e.g. Q4_K,Q6_K,Dense(4B)")
    List<String> servable;
    @Option(names = "--offheap", description = "candidate off-heap support (true/false)")
    Boolean offHeap;
    @Option(names = "--mapped-files", description = "candidate file mapping support (true/false)")
    Boolean mappedFiles;
    @Option(names = "--tensors", defaultValue = "20", description = "tensor changes to list in the table (default: ${DEFAULT-VALUE})")
    int tensors;

    @Override
    public Integer call() throws Exception {
        common.requirePositive("--tensors", tensors);
        StoreConfig config = common.storeConfig();
        KafkaReachability.check(config.kafka(), config.connectTimeout(), List.of(loadsTopic));
        return common.show(db -> new WhatIf(db.dataSource(), config.kafka(), loadsTopic,
                config.connectTimeout()).run(query()),
                (o, report) -> {
                    o.println(report.summary());
                    report.deployments().forEach(d -> o.printf(Locale.ROOT, "  %-16s %4d loads  %6d unchanged  %6d changed  %6d new  %s%n",
                            d.deploymentId(), d.loads(), d.unchanged(), d.changed(), d.added(), d.deltaByDomain()));
                    report.changes().stream().limit(tensors).forEach(t -> o.printf(Locale.ROOT, "  %-9s %-16s %-32s %s -> %s  %s%n",
                            t.change(), t.deploymentId(), t.tensorName(), t.beforeDomain(), t.afterDomain(), ByteSizes.format(t.residentBytes())));
                });
    }

    WhatIf.Query query() {
        return new WhatIf.Query(from, to == null ? Instant.now() : to, filter.deployment, filter.model,
                new WhatIf.CandidatePolicy(
                        threshold == null ? OptionalLong.empty() : OptionalLong.of(threshold),
                        servable == null ? Optional.empty() : Optional.of(servable.stream()
                                .map(TensorEncodings::parseKnown).collect(Collectors.toSet())),
                        Optional.ofNullable(offHeap), Optional.ofNullable(mappedFiles)));
    }
}
