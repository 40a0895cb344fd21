package dev.placementaudit.core.placement;

import dev.placementaudit.core.format.TensorEncoding;

import java.util.Locale;

/**
 * A strict profile refuses to dequantize a weight silently: on a phone an 8x blow-up at load is an OOM, so it
 * must fail at planning time instead (SKaiNET #1128).
 */
public final class StrictFormRefusedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    private final String encodingLabel;

    StrictFormRefusedException(TensorEncoding stored, PlannerProfile profile) {
        super("no kernel feeds " + stored.label() + " and profile '" + profile.name() + "' is strict: refusing to "
                + "dequantize it to FP32 at load, which would grow it " + growth(stored));
        this.encodingLabel = stored.label();
    }

    public String encodingLabel() {
        return encodingLabel;
    }

    public ReasonCode code() {
        return ReasonCode.FORM_STRICT_REFUSED;
    }

    private static String growth(TensorEncoding stored) {
        return stored.blockSpec()
                .map(spec -> String.format(Locale.ROOT, "%.1f\u00d7", spec.fp32BlowUp()))
                .orElse("several\u00d7 (its size is opaque)");
    }
}
