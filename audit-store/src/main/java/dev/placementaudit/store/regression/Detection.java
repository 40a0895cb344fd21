package dev.placementaudit.store.regression;

import java.util.List;

/** A completed load against its predecessor: what changed, finding by finding and as root causes. */
public record Detection(LoadRef load, LoadRef previous, List<Finding> findings, List<RootCauses.CauseGroup> causes) {
    public Detection {
        findings = List.copyOf(findings);
        causes = List.copyOf(causes);
    }

    public boolean has(FindingKind kind) {
        return findings.stream().anyMatch(f -> f.kind() == kind);
    }

    public List<Finding> of(FindingKind kind) {
        return findings.stream().filter(f -> f.kind() == kind).toList();
    }
}
