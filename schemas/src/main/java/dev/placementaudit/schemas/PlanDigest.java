package dev.placementaudit.schemas;

import dev.placementaudit.events.AllocationDecided;
import dev.placementaudit.events.ReasonCode;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * The digest that names a placement plan: SHA-256 over a load's decisions minus everything load-specific (ids,
 * deployment, host, times, provenance, resolver version and policy digest, which its summary keeps), in tensor order.
 * The resolver is a pure function, so every load of one model file under one policy gets the same plan; the worker
 * computes the digest and carries it on AllocationDecided and LoadResolved (v3 and v2), and the store keeps each plan
 * once and each load as one row that names it. The store computes the digest itself, by this class, for events that
 * do not carry it, and for every plan it builds from decisions, so a digest it stores is one it checked.
 *
 * <p>Canonical encoding (the same value encoding as the store's hash chain): the text {@code placement-plan/1}, then
 * for each tensor, in index order, its {@link #COLUMNS} in that order, then the number of tensors as an integer. Each
 * value is one tag byte and its bytes: {@code 1}, a 4-byte big-endian length and the UTF-8 bytes for text; {@code 2}
 * and 8 big-endian bytes for an integer; {@code 3} and one byte (0 or 1) for a boolean. Enums are their symbol names;
 * {@code mapping_blockers} is the blockers' names joined by commas, in explain order (empty when none).
 *
 * <p>Not thread-safe: one per plan being digested.
 */
public final class PlanDigest {
    /** What starts every plan's encoding: a new encoding gets a new tag, so digests of two encodings never meet. */
    public static final String VERSION = "placement-plan/1";
    /** A tensor's values, in the order they are encoded (the store's column names). */
    public static final List<String> COLUMNS = List.of("tensor_index", "tensor_name", "dtype", "stored_encoding", "stored_format",
            "element_count", "stored_bytes", "size_estimated", "resident_format", "resident_bytes", "memory_domain", "scope_kind",
            "mapping_requested", "reason_code", "placement_reason", "mapping_blockers", "reason");

    private final MessageDigest sha;
    private final byte[] scratch = new byte[9];
    private long tensors;

    /**
     * SHA-256 with {@link #VERSION} already taken in, never updated after: each digest starts as a copy of it, without
     * looking the algorithm up again (a store digests every tensor of every new plan, so that look-up was a visible
     * part of its cost). Copying reads it only, so threads may copy it at once.
     */
    private static final MessageDigest STARTED = started();

    public PlanDigest() {
        try {
            sha = (MessageDigest) STARTED.clone();
        } catch (CloneNotSupportedException e) {
            throw new IllegalStateException("SHA-256 digests can be copied", e);
        }
    }

    private static MessageDigest started() {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM ships SHA-256", e);
        }
        byte[] version = VERSION.getBytes(StandardCharsets.UTF_8);
        int length = version.length;
        sha.update(new byte[]{1, (byte) (length >>> 24), (byte) (length >>> 16), (byte) (length >>> 8), (byte) length});
        sha.update(version);
        return sha;
    }

    /**
     * Adds one tensor's values, in {@link #COLUMNS} order: {@link String}, {@link Number} (int or long) or
     * {@link Boolean} each, as the store reads them from its rows.
     */
    public PlanDigest tensor(Object... values) {
        if (values.length != COLUMNS.size()) {
            throw new IllegalArgumentException("a plan tensor has " + COLUMNS.size() + " values, not " + values.length);
        }
        for (Object value : values) {
            if (value instanceof String s) {
                text(s);
            } else if (value instanceof Boolean b) {
                bool(b);
            } else if (value instanceof Number n) {
                integer(n.longValue());
            } else {
                throw new IllegalArgumentException("a plan value is text, an integer or a boolean, not " + value);
            }
        }
        tensors++;
        return this;
    }

    /** A decision's plan values, in {@link #COLUMNS} order, as the store keeps them. */
    public static Object[] values(AllocationDecided d) {
        return new Object[]{d.getTensorIndex(), d.getTensorName(), d.getDtype(), d.getStoredEncoding(), d.getStoredFormat(),
                d.getElementCount(), d.getStoredBytes(), d.getSizeEstimated(), d.getResidentFormat(), d.getResidentBytes(),
                d.getDomain().name(), d.getScope().name(), d.getMappingRequested(), d.getReasonCode().name(), d.getPlacementReason().name(),
                blockers(d.getMappingBlockers()), d.getReason()};
    }

    /**
     * Whether a decision carries exactly these plan values ({@link #values} of a plan's tensor): the same test as
     * comparing {@link #values}{@code (d)} with them element by element, without building them.
     */
    public static boolean carries(Object[] values, AllocationDecided d) {
        return values.length == COLUMNS.size() && Integer.valueOf(d.getTensorIndex()).equals(values[0])
                && Objects.equals(values[1], d.getTensorName()) && Objects.equals(values[2], d.getDtype())
                && Objects.equals(values[3], d.getStoredEncoding()) && Objects.equals(values[4], d.getStoredFormat())
                && values[5] instanceof Long elements && elements == d.getElementCount()
                && values[6] instanceof Long stored && stored == d.getStoredBytes()
                && values[7] instanceof Boolean estimated && estimated == d.getSizeEstimated()
                && Objects.equals(values[8], d.getResidentFormat())
                && values[9] instanceof Long resident && resident == d.getResidentBytes()
                && d.getDomain().name().equals(values[10]) && d.getScope().name().equals(values[11])
                && values[12] instanceof Boolean requested && requested == d.getMappingRequested()
                && d.getReasonCode().name().equals(values[13]) && d.getPlacementReason().name().equals(values[14])
                && blockersAre(values[15], d.getMappingBlockers()) && Objects.equals(values[16], d.getReason());
    }

    private static boolean blockersAre(Object kept, List<ReasonCode> blockers) {
        if (blockers.size() <= 1) {
            return (blockers.isEmpty() ? "" : blockers.get(0).name()).equals(kept);
        }
        return blockers(blockers).equals(kept);
    }

    /** Mapping blockers as a plan keeps them: their names joined by commas, in explain order ("" when none). */
    public static String blockers(List<ReasonCode> blockers) {
        if (blockers.isEmpty()) {
            return "";
        }
        return blockers.size() == 1 ? blockers.get(0).name() : blockers.stream().map(ReasonCode::name).collect(Collectors.joining(","));
    }

    /** The digest of these decisions of one load, in the order given (tensor order). */
    public static String of(List<AllocationDecided> decisions) {
        PlanDigest plan = new PlanDigest();
        decisions.forEach(d -> plan.tensor(values(d)));
        return plan.digest();
    }

    /** Ends one tensor written value by value (the worker's path, without boxing); see {@link #COLUMNS}. */
    public void endTensor() {
        tensors++;
    }

    public PlanDigest text(String value) {
        return text(value.getBytes(StandardCharsets.UTF_8));
    }

    public PlanDigest text(byte[] utf8) {
        length(1, utf8.length);
        sha.update(utf8);
        return this;
    }

    /** One text value given in two parts (a reason is the tensor's name and then its explanation). */
    public PlanDigest text(byte[] first, byte[] second) {
        length(1, first.length + second.length);
        sha.update(first);
        sha.update(second);
        return this;
    }

    public PlanDigest integer(long value) {
        scratch[0] = 2;
        for (int i = 0; i < 8; i++) {
            scratch[1 + i] = (byte) (value >>> (56 - 8 * i));
        }
        sha.update(scratch, 0, 9);
        return this;
    }

    public PlanDigest bool(boolean value) {
        scratch[0] = 3;
        scratch[1] = (byte) (value ? 1 : 0);
        sha.update(scratch, 0, 2);
        return this;
    }

    /** The plan's digest, as 64 lower-case hex characters; this object is spent after. */
    public String digest() {
        integer(tensors);
        return HexFormat.of().formatHex(sha.digest());
    }

    private void length(int tag, int length) {
        scratch[0] = (byte) tag;
        scratch[1] = (byte) (length >>> 24);
        scratch[2] = (byte) (length >>> 16);
        scratch[3] = (byte) (length >>> 8);
        scratch[4] = (byte) length;
        sha.update(scratch, 0, 5);
    }
}
