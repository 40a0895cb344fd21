package dev.placementaudit.core.format;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads the wire form ({@link TensorEncoding#spec()}) back into an encoding. */
public final class TensorEncodings {
    private static final Pattern DENSE = Pattern.compile("Dense\\((\\d{1,3})B\\)");
    private static final Pattern POLAR = Pattern.compile("TurboQuant-Polar-(\\d)b/(\\d{1,6})");
    private static final Pattern POLAR_QJL = Pattern.compile("TurboQuant-PolarQjl-(\\d)b\\+(\\d)r/(\\d{1,6})");

    /** Encodings are immutable values and a fleet uses a handful of specs: parsing each once is enough. */
    private static final Map<String, TensorEncoding> KNOWN = new ConcurrentHashMap<>();

    private TensorEncodings() {
    }

    /**
     * @param spec        the wire form, e.g. {@code Q4_K}, {@code Dense(4B)}, {@code Opaque:Q3_K}
     * @param storedBytes the file's byte count; only an opaque encoding takes its size from it
     * @throws UnknownEncodingException naming the value when it is no encoding this resolver knows
     */
    public static TensorEncoding parse(String spec, long storedBytes) {
        if (spec == null || spec.isEmpty()) {
            throw new UnknownEncodingException(String.valueOf(spec), "it is empty");
        }
        if (spec.startsWith(Opaque.SPEC_PREFIX)) {
            return new Opaque(spec.substring(Opaque.SPEC_PREFIX.length()), storedBytes);
        }
        return parseKnown(spec);
    }

    /** The same, for configuration (servable sets, requantize targets) where an opaque encoding makes no sense. */
    public static TensorEncoding parseKnown(String spec) {
        TensorEncoding known = KNOWN.get(spec);
        if (known != null) {
            return known;
        }
        TensorEncoding parsed = parseUncached(spec);
        if (KNOWN.size() < 1_024) {
            KNOWN.put(spec, parsed);
        }
        return parsed;
    }

    private static TensorEncoding parseUncached(String spec) {
        for (BlockQuant quant : BlockQuant.values()) {
            if (quant.label().equals(spec)) {
                return quant;
            }
        }
        for (PackedEncoding packed : PackedEncoding.values()) {
            if (packed.label().equals(spec) || packed.name().equals(spec)) {
                return packed;
            }
        }
        try {
            Matcher m = DENSE.matcher(spec);
            if (m.matches()) {
                return new Dense(Integer.parseInt(m.group(1)));
            }
            m = POLAR.matcher(spec);
            if (m.matches()) {
                return new TurboQuantPolar(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)));
            }
            m = POLAR_QJL.matcher(spec);
            if (m.matches()) {
                return new TurboQuantPolarQjl(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)),
                        Integer.parseInt(m.group(3)));
            }
        } catch (IllegalArgumentException e) {
            throw new UnknownEncodingException(spec, e.getMessage());
        }
        throw new UnknownEncodingException(spec, "expected Dense(<n>B), a block quantization such as Q4_K, "
                + "Ternary, BitNet-b1.58, BitNet-planes, I8-absmax, TurboQuant-Polar-<b>b/<block>, "
                + "TurboQuant-PolarQjl-<b>b+<r>r/<block> or Opaque:<name>");
    }
}
