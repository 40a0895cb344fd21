package dev.placementaudit.core.placement;

import java.util.Objects;

/**
 * The form in which a loader holds a weight. {@link #AS_STORED_ON_HEAP} also stands for "no form given": every
 * placement rule treats the two alike (neither asks for a mapping, both keep the file's bytes), so one value
 * serves and no nullable form leaks into the domain.
 */
public record WeightForm(EncodingRequest encoding, WeightByteOrder order, WeightShapeOrientation shape,
                         WeightResidency residency) {
    public static final WeightForm AS_STORED_ON_HEAP = new WeightForm(EncodingRequest.KEEP_AS_STORED,
            WeightByteOrder.AS_STORED, WeightShapeOrientation.AS_STORED, WeightResidency.HEAP);
    public static final WeightForm AS_STORED_MAPPED = AS_STORED_ON_HEAP.withResidency(WeightResidency.MAPPED);

    public WeightForm {
        Objects.requireNonNull(encoding, "encoding");
        Objects.requireNonNull(order, "order");
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(residency, "residency");
    }

    public boolean isPassThrough() {
        return equals(AS_STORED_ON_HEAP);
    }

    public boolean keepsStoredEncoding() {
        return encoding instanceof EncodingRequest.KeepAsStored;
    }

    public boolean asksForMapping() {
        return residency == WeightResidency.MAPPED;
    }

    public WeightForm withEncoding(EncodingRequest newEncoding) {
        return new WeightForm(newEncoding, order, shape, residency);
    }

    public WeightForm withOrder(WeightByteOrder newOrder) {
        return new WeightForm(encoding, newOrder, shape, residency);
    }

    public WeightForm withResidency(WeightResidency newResidency) {
        return new WeightForm(encoding, order, shape, newResidency);
    }
}
