package dev.placementaudit.core.format;

/**
 * The payload density of a quantized encoding. Used to say how much a dequantization to FP32 would grow a
 * weight ({@code 32 / bitsPerElement}), which is what a strict profile refuses to do silently.
 */
public record BlockSpec(double bitsPerElement) {
    public BlockSpec {
        if (!(bitsPerElement > 0)) {
            throw new IllegalArgumentException("bitsPerElement must be > 0, was " + bitsPerElement);
        }
    }

    /** Growth factor of dequantizing this encoding to 32-bit floats. */
    public double fp32BlowUp() {
        return 32.0 / bitsPerElement;
    }
}
