package dev.placementaudit.store.incidents;

import dev.placementaudit.store.regression.Detection;
import dev.placementaudit.store.regression.FindingKind;
import dev.placementaudit.store.regression.ReleaseDiff;
import dev.placementaudit.store.regression.RootCauses;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

/**
 * A root cause a load shows against its predecessor, as an incident sees it: which incident it belongs to (its
 * fingerprint), the finding kinds it raised in that load, and the bytes it moved there.
 *
 * <p>The fingerprint (docs/incidents.md) is the first 16 hex digits of SHA-256 over, separated by NUL: {@code
 * placement-incident/1}, the model, the release before and after, the group's domains, reasons (with blockers) and
 * resident formats before and after, and the SHA-256 of the group's tensor names sorted and joined by newlines. It
 * depends on nothing a deployment or a load adds: every load of every deployment that makes the same change to the
 * same tensors of the same model between the same two releases names the same incident.
 *
 * @param kinds what this cause raised in this load: {@code LOST_MAPPING} when the tensors left their mapping,
 *              {@code OFFHEAP_GROWTH}/{@code HEAP_GROWTH} when the load's total grew past its rule and the group moved
 *              bytes into that domain, {@code FORMAT_CHANGED} when their resident format changed
 */
public record Cause(String incidentId, String modelId, String fromRelease, String toRelease, RootCauses.CauseGroup group,
                    String tensorsDigest, Set<FindingKind> kinds) {
    /** The kinds that make a cause an incident; the first present is its primary kind. */
    static final List<FindingKind> PRIMARY_ORDER = List.of(FindingKind.LOST_MAPPING, FindingKind.OFFHEAP_GROWTH, FindingKind.HEAP_GROWTH,
            FindingKind.UNPLANNED_OFFHEAP, FindingKind.MAPPING_NOT_OBSERVED, FindingKind.DIVERGED);

    public Cause {
        kinds = Set.copyOf(kinds);
    }

    /** The causes of a detection that are regressions (lost mapping, or growth past a rule), largest first. */
    public static List<Cause> of(Detection d) {
        List<Cause> causes = new ArrayList<>();
        for (RootCauses.CauseGroup g : d.causes()) {
            Set<FindingKind> kinds = EnumSet.noneOf(FindingKind.class);
            if (ReleaseDiff.MMAP.equals(g.beforeDomain()) && g.afterDomain() != null && !ReleaseDiff.MMAP.equals(g.afterDomain())) {
                kinds.add(FindingKind.LOST_MAPPING);
            }
            if (d.has(FindingKind.OFFHEAP_GROWTH) && g.deltaBytesByDomain().getOrDefault(ReleaseDiff.OFFHEAP, 0L) > 0) {
                kinds.add(FindingKind.OFFHEAP_GROWTH);
            }
            if (d.has(FindingKind.HEAP_GROWTH) && g.deltaBytesByDomain().getOrDefault(ReleaseDiff.HEAP, 0L) > 0) {
                kinds.add(FindingKind.HEAP_GROWTH);
            }
            if (kinds.isEmpty()) {
                continue;
            }
            if (g.beforeFormat() != null && g.afterFormat() != null && !g.beforeFormat().equals(g.afterFormat())) {
                kinds.add(FindingKind.FORMAT_CHANGED);
            }
            String tensors = tensorsDigest(g);
            causes.add(new Cause(fingerprint(d.load().modelId(), d.previous().release(), d.load().release(), g, tensors), d.load().modelId(),
                    d.previous().release(), d.load().release(), g, tensors, kinds));
        }
        return causes;
    }

    /**
     * The strongest of these kinds: lost mapping, then off-heap growth, then heap growth, then what the runtime showed
     * (unplanned off-heap, a mapping not observed, a divergence).
     */
    public static FindingKind primary(Set<FindingKind> kinds) {
        return PRIMARY_ORDER.stream().filter(kinds::contains).findFirst().orElse(FindingKind.FORMAT_CHANGED);
    }

    static String fingerprint(String model, String fromRelease, String toRelease, RootCauses.CauseGroup g, String tensorsDigest) {
        String text = String.join("\0", "placement-incident/1", model, fromRelease, toRelease, String.valueOf(g.beforeDomain()),
                String.valueOf(g.afterDomain()), String.valueOf(g.beforeReason()), String.valueOf(g.afterReason()),
                String.valueOf(g.beforeFormat()), String.valueOf(g.afterFormat()), tensorsDigest);
        return "inc-" + sha256(text).substring(0, 16);
    }

    /** The SHA-256 of a group's tensor names, sorted and joined by newlines. */
    static String tensorsDigest(RootCauses.CauseGroup g) {
        return sha256(String.join("\n", g.tensors().stream().map(RootCauses.TensorChange::name).sorted().toList()));
    }

    static String sha256(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
