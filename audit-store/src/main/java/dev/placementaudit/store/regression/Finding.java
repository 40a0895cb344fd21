package dev.placementaudit.store.regression;

/**
 * One change between two loads: for a tensor (name set), or for a load total (name null). Before/after fields are
 * null where there was no before (added) or no after (removed).
 */
public record Finding(FindingKind kind, String tensorName, String beforeDomain, String afterDomain, long beforeBytes, long afterBytes,
                      String beforeFormat, String afterFormat, String beforeReason, String afterReason) {

    public long deltaBytes() {
        return afterBytes - beforeBytes;
    }

    public static Finding total(FindingKind kind, long before, long after, String rule) {
        return new Finding(kind, null, null, null, before, after, null, null, null, rule);
    }
}
