package dev.placementaudit.store.regression;

import dev.placementaudit.core.placement.ByteSizes;
import dev.placementaudit.store.plans.TensorPlacement;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * A diff told as its causes: the tensors that moved for the same reason, grouped by their transition (domain,
 * reason and blockers, resident format, before and after), each group with its tensor count, its byte delta per
 * domain and one line in words, e.g. "16 tensors re-encoded at load (Float32/Q6_K -> Float32/Dense(4B)): lost
 * mapping, +816 MB off-heap, -816 MB mapped". Groups come largest first (bytes moved), then by count and cause, so
 * the same two loads always read the same. Pure, like {@link ReleaseDiff}.
 */
public final class RootCauses {
    private RootCauses() {
    }

    /** One tensor's change, both sides (null where there is no side: added or removed). */
    public record TensorChange(String name, String beforeDomain, String afterDomain, long beforeBytes, long afterBytes, String beforeFormat,
                               String afterFormat, String beforeReasonCode, String afterReasonCode, String beforeReason, String afterReason) {
        public long deltaBytes() {
            return afterBytes - beforeBytes;
        }

        /** "mapped 13 MB -> off-heap 52 MB", or one side when the tensor was added or removed. */
        public String placement() {
            String before = beforeDomain == null ? "(absent)" : domainName(beforeDomain) + " " + ByteSizes.format(beforeBytes);
            String after = afterDomain == null ? "(removed)" : domainName(afterDomain) + " " + ByteSizes.format(afterBytes);
            return before + " -> " + after;
        }
    }

    /**
     * Tensors that moved the same way.
     *
     * @param deltaBytesByDomain bytes gained (positive) or released (negative) per memory domain, domains with no change left out
     * @param tensors            every tensor of the group, the largest change first
     */
    public record CauseGroup(String cause, int tensorCount, Map<String, Long> deltaBytesByDomain, long bytesMoved, String beforeDomain,
                             String afterDomain, String beforeReason, String afterReason, String beforeFormat, String afterFormat,
                             List<TensorChange> tensors) {
        public CauseGroup {
            deltaBytesByDomain = Collections.unmodifiableMap(new LinkedHashMap<>(deltaBytesByDomain));
            tensors = List.copyOf(tensors);
        }
    }

    public static List<CauseGroup> of(List<TensorPlacement> before, List<TensorPlacement> after) {
        Map<String, TensorPlacement> old = new LinkedHashMap<>();
        before.forEach(t -> old.put(t.name(), t));
        Map<String, TensorPlacement> now = new LinkedHashMap<>();
        after.forEach(t -> now.put(t.name(), t));
        Map<Key, List<TensorChange>> groups = new LinkedHashMap<>();
        for (TensorPlacement n : after) {
            TensorPlacement o = old.get(n.name());
            if (o == null || changed(o, n)) {
                add(groups, o, n);
            }
        }
        for (TensorPlacement o : before) {
            if (!now.containsKey(o.name())) {
                add(groups, o, null);
            }
        }
        List<CauseGroup> causes = new ArrayList<>();
        groups.forEach((key, changes) -> causes.add(group(key, changes)));
        // A total order: two groups can read alike (the same effect from different decisions), so the key breaks ties.
        Comparator<String> text = Comparator.nullsFirst(Comparator.naturalOrder());
        causes.sort(Comparator.comparingLong(CauseGroup::bytesMoved).reversed().thenComparing(Comparator.comparingInt(CauseGroup::tensorCount).reversed())
                .thenComparing(CauseGroup::cause).thenComparing(CauseGroup::beforeReason, text).thenComparing(CauseGroup::afterReason, text)
                .thenComparing(CauseGroup::beforeDomain, text).thenComparing(CauseGroup::afterDomain, text)
                .thenComparing(CauseGroup::beforeFormat, text).thenComparing(CauseGroup::afterFormat, text));
        return causes;
    }

    /** The tensors behind a change of one domain's total, largest first: what an alert on that domain names. */
    public static List<TensorChange> topTensors(List<CauseGroup> causes, String domain, int limit) {
        return causes.stream().flatMap(g -> g.tensors().stream())
                .filter(t -> domain.equals(t.beforeDomain()) || domain.equals(t.afterDomain()))
                .filter(t -> domainDelta(t, domain) != 0)
                .sorted(Comparator.comparingLong((TensorChange t) -> Math.abs(domainDelta(t, domain))).reversed().thenComparing(TensorChange::name))
                .limit(limit).toList();
    }

    /** The groups that moved bytes into or out of a domain, in their order. */
    public static List<CauseGroup> touching(List<CauseGroup> causes, String domain) {
        return causes.stream().filter(g -> g.deltaBytesByDomain().containsKey(domain)).toList();
    }

    private static long domainDelta(TensorChange t, String domain) {
        long delta = 0;
        if (domain.equals(t.beforeDomain())) {
            delta -= t.beforeBytes();
        }
        if (domain.equals(t.afterDomain())) {
            delta += t.afterBytes();
        }
        return delta;
    }

    private static boolean changed(TensorPlacement o, TensorPlacement n) {
        return !o.domain().equals(n.domain()) || o.residentBytes() != n.residentBytes() || !o.residentFormat().equals(n.residentFormat())
                || !o.reasonCode().equals(n.reasonCode()) || !Objects.equals(o.mappingBlockers(), n.mappingBlockers());
    }

    private static void add(Map<Key, List<TensorChange>> groups, TensorPlacement o, TensorPlacement n) {
        Key key = new Key(o == null ? null : o.domain(), n == null ? null : n.domain(), o == null ? null : reason(o), n == null ? null : reason(n),
                o == null ? null : o.residentFormat(), n == null ? null : n.residentFormat(), n == null ? null : n.reasonCode(),
                n == null ? null : n.storedFormat());
        groups.computeIfAbsent(key, k -> new ArrayList<>()).add(new TensorChange((n != null ? n : o).name(), key.beforeDomain(), key.afterDomain(),
                o == null ? 0 : o.residentBytes(), n == null ? 0 : n.residentBytes(), key.beforeFormat(), key.afterFormat(),
                o == null ? null : o.reasonCode(), n == null ? null : n.reasonCode(), o == null ? null : o.reason(), n == null ? null : n.reason()));
    }

    /** A decision's reason as a group key: its primary code, and its blockers when there are any. */
    private static String reason(TensorPlacement t) {
        return t.mappingBlockers() == null || t.mappingBlockers().isEmpty() || t.mappingBlockers().equals(t.reasonCode())
                ? t.reasonCode() : t.reasonCode() + " [" + t.mappingBlockers() + "]";
    }

    private static CauseGroup group(Key key, List<TensorChange> changes) {
        Map<String, Long> deltas = new LinkedHashMap<>();
        for (TensorChange t : changes) {
            if (t.beforeDomain() != null) {
                deltas.merge(t.beforeDomain(), -t.beforeBytes(), Long::sum);
            }
            if (t.afterDomain() != null) {
                deltas.merge(t.afterDomain(), t.afterBytes(), Long::sum);
            }
        }
        deltas.values().removeIf(v -> v == 0);
        Map<String, Long> ordered = new LinkedHashMap<>();
        deltas.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue(Comparator.comparingLong(Math::abs)).reversed()
                .thenComparing(Map.Entry.comparingByKey())).forEach(e -> ordered.put(e.getKey(), e.getValue()));
        long moved = ordered.values().stream().mapToLong(Math::abs).sum();
        List<TensorChange> sorted = changes.stream().sorted(Comparator.comparingLong((TensorChange t) -> Math.abs(t.deltaBytes())).reversed()
                .thenComparing(TensorChange::name)).toList();
        return new CauseGroup(sentence(key, changes.size(), ordered), changes.size(), ordered, moved, key.beforeDomain(), key.afterDomain(),
                key.beforeReason(), key.afterReason(), key.beforeFormat(), key.afterFormat(), sorted);
    }

    /** "16 tensors re-encoded at load (Float32/Q6_K -> Float32/Dense(4B)): lost mapping, +816 MB off-heap, -816 MB mapped". */
    static String sentence(Key key, int count, Map<String, Long> deltas) {
        StringBuilder s = new StringBuilder().append(count).append(count == 1 ? " tensor " : " tensors ");
        if (key.beforeDomain() == null) {
            s.append("added");
        } else if (key.afterDomain() == null) {
            s.append("removed");
        } else {
            s.append(what(key));
            if (!key.beforeFormat().equals(key.afterFormat())) {
                s.append(" (").append(key.beforeFormat()).append(" -> ").append(key.afterFormat()).append(')');
            }
        }
        List<String> effects = new ArrayList<>();
        if (key.beforeDomain() != null && key.afterDomain() != null) {
            if (ReleaseDiff.MMAP.equals(key.beforeDomain()) && !ReleaseDiff.MMAP.equals(key.afterDomain())) {
                effects.add("lost mapping");
            } else if (!ReleaseDiff.MMAP.equals(key.beforeDomain()) && ReleaseDiff.MMAP.equals(key.afterDomain())) {
                effects.add("gained mapping");
            } else if (!key.beforeDomain().equals(key.afterDomain())) {
                effects.add("moved " + domainName(key.beforeDomain()) + " -> " + domainName(key.afterDomain()));
            }
        }
        deltas.forEach((domain, delta) -> effects.add((delta > 0 ? "+" : "-") + ByteSizes.format(Math.abs(delta)) + " " + domainName(domain)));
        if (!effects.isEmpty()) {
            s.append(": ").append(String.join(", ", effects));
        }
        return s.toString();
    }

    /** What happened to the tensors, from the reason of the later decision (or the earlier, when only its bytes moved). */
    private static String what(Key key) {
        String code = key.afterCode();
        boolean sameReason = Objects.equals(key.beforeReason(), key.afterReason());
        if (sameReason && !key.beforeFormat().equals(key.afterFormat())) {
            // Same reason, another format: the loader now converts it (or no longer does), where it lands unchanged.
            return key.afterFormat().equals(key.afterStored()) ? "held as stored again" : "re-encoded at load";
        }
        return switch (code) {
            case "REENCODED_AT_LOAD" -> "re-encoded at load";
            case "ENCODING_NOT_MAPPABLE" -> "no longer served from a mapping (encoding not mappable)";
            case "PLATFORM_CANNOT_MAP" -> "not mapped: the platform cannot map files";
            case "KERNEL_FEED_COPY" -> "copied into kernel feed order";
            case "ABOVE_THRESHOLD" -> "at or above the off-heap threshold";
            case "BELOW_THRESHOLD" -> "below the off-heap threshold";
            case "NO_OFFHEAP_ON_PLATFORM" -> "kept on the heap: no off-heap on the platform";
            case "FORM_STRICT_REFUSED" -> "refused by a strict form";
            case "MAPPED_OK" -> "now mapped";
            default -> "placed for " + code.toLowerCase(Locale.ROOT).replace('_', ' ');
        } + (sameReason ? "" : (key.afterReason().contains("[") ? " " + key.afterReason().substring(key.afterReason().indexOf('[')) : ""));
    }

    public static String domainName(String domain) {
        return switch (domain) {
            case "HOST_HEAP" -> "heap";
            case "HOST_OFFHEAP" -> "off-heap";
            case "MMAP_FILE" -> "mapped";
            default -> domain.toLowerCase(Locale.ROOT).replace('_', '-');
        };
    }

    record Key(String beforeDomain, String afterDomain, String beforeReason, String afterReason, String beforeFormat, String afterFormat,
               String afterCode, String afterStored) {
        // Written out: a record's generated equals and hashCode bootstrap method handles on first use, some 30 ms of a
        // cold `store diff` (docs/adr/0007-start-up.md).
        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && Objects.equals(beforeDomain, k.beforeDomain) && Objects.equals(afterDomain, k.afterDomain)
                    && Objects.equals(beforeReason, k.beforeReason) && Objects.equals(afterReason, k.afterReason)
                    && Objects.equals(beforeFormat, k.beforeFormat) && Objects.equals(afterFormat, k.afterFormat)
                    && Objects.equals(afterCode, k.afterCode) && Objects.equals(afterStored, k.afterStored);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(new Object[] {beforeDomain, afterDomain, beforeReason, afterReason, beforeFormat, afterFormat, afterCode,
                    afterStored});
        }
    }
}
