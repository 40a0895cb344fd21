package dev.placementaudit.store.plans;

/**
 * One tensor's stored decision, as the diff needs it.
 *
 * @param storedFormat    the format the file holds, e.g. Float32/Q6_K
 * @param residentFormat  the format it is held in after loading, e.g. Float32/Dense(4B) when dequantized
 * @param mappingBlockers every reason a requested mapping was refused, comma-separated, in explain order ("" if none)
 */
public record TensorPlacement(String name, int index, String domain, long residentBytes, String storedFormat, String residentFormat,
                              String reasonCode, String mappingBlockers, String reason) {

    /** A placement whose stored format is its resident one and that met no blocker. */
    public TensorPlacement(String name, int index, String domain, long residentBytes, String residentFormat, String reasonCode, String reason) {
        this(name, index, domain, residentBytes, residentFormat, residentFormat, reasonCode, "", reason);
    }
}
