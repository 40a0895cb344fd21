package dev.placementaudit.core.placement;

import dev.placementaudit.core.format.TensorEncoding;

import java.math.BigDecimal;
import java.math.RoundingMode;

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
                // Truncated to one decimal, as SKaiNET prints it: TQ1_0's 19.69x reads "19.6x".
                .map(spec -> BigDecimal.valueOf(spec.fp32BlowUp()).setScale(1, RoundingMode.DOWN).toPlainString() + "\u00d7")
                .orElse("several\u00d7 (its size is opaque)");
    }
}
