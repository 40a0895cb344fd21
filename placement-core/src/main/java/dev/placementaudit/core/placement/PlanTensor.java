package dev.placementaudit.core.placement;

import dev.placementaudit.core.format.Format;

import java.util.Objects;

/**
 * One weight as the planner sees it.
 *
 * @param bytes what the file holds: the format's physical bytes, or the file's own count where the encoding
 *              cannot compute one (BitNet planes, I8-absmax)
 * @param form  how the loader will hold it; {@link WeightForm#AS_STORED_ON_HEAP} when none was asked for
 */
public record PlanTensor(String name, Format format, long elementCount, long bytes, WeightForm form) {
    public PlanTensor {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(format, "format");
        Objects.requireNonNull(form, "form");
        if (name.isBlank()) {
            throw new IllegalArgumentException("tensor name must not be blank");
        }
        if (elementCount < 0) {
            throw new IllegalArgumentException("tensor '" + name + "': elementCount must be >= 0, was " + elementCount);
        }
        if (bytes < 0) {
            throw new IllegalArgumentException("tensor '" + name + "': bytes must be >= 0, was " + bytes);
        }
    }

    /** A tensor priced by its format; fails for encodings that need the file's own byte count. */
    public static PlanTensor of(String name, Format format, long elementCount, WeightForm form) {
        long bytes = format.physicalBytes(elementCount).orElseThrow(() -> new IllegalArgumentException(
                "tensor '" + name + "': " + format + " cannot be priced from an element count; pass the file's bytes"));
        return new PlanTensor(name, format, elementCount, bytes, form);
    }

    /**
     * What memory holds once the form is honoured. A re-encoding to a format that cannot price itself falls back
     * to the stored bytes, as SKaiNET does (domain Q9) - an under-estimate worth knowing about.
     */
    public long residentBytes() {
        if (form.encoding() instanceof EncodingRequest.DequantizeTo dequantize) {
            return Math.multiplyExact(elementCount, (long) dequantize.dtype().sizeInBytes());
        }
        if (form.encoding() instanceof EncodingRequest.RequantizeTo requantize) {
            return new Format(format.dtype(), requantize.encoding()).physicalBytes(elementCount).orElse(bytes);
        }
        return bytes;
    }

    public Format residentFormat() {
        if (form.encoding() instanceof EncodingRequest.DequantizeTo dequantize) {
            return Format.dense(dequantize.dtype());
        }
        if (form.encoding() instanceof EncodingRequest.RequantizeTo requantize) {
            return new Format(format.dtype(), requantize.encoding());
        }
        return format;
    }

    public PlanTensor withForm(WeightForm newForm) {
        return new PlanTensor(name, format, elementCount, bytes, newForm);
    }
}
