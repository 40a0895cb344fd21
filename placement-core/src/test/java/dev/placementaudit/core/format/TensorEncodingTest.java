package dev.placementaudit.core.format;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TensorEncodingTest {

    @Test
    void pricesBlocksByCeilingOfTheBlockCount() {
        assertThat(BlockQuant.Q4_K.physicalBytes(1)).hasValue(144);
        assertThat(BlockQuant.Q4_K.physicalBytes(1_048_576)).hasValue(589_824);
        assertThat(BlockQuant.Q6_K.physicalBytes(256)).hasValue(210);
        assertThat(BlockQuant.Q5_K.physicalBytes(256)).hasValue(176);
        assertThat(BlockQuant.Q8_0.physicalBytes(32)).hasValue(34);
        assertThat(BlockQuant.TQ1_0.physicalBytes(256)).hasValue(54);
        assertThat(BlockQuant.TQ2_0.physicalBytes(256)).hasValue(66);
    }

    @Test
    void pricesPackedEncodingsAndAdmitsWhereItCannot() {
        assertThat(PackedEncoding.TERNARY_PACKED.physicalBytes(5)).hasValue(2);
        assertThat(PackedEncoding.BITNET_B1_58.physicalBytes(5)).hasValue(6);
        assertThat(PackedEncoding.BITNET_PLANES.physicalBytes(5)).isEmpty();
        assertThat(PackedEncoding.DENSE_I8_ABSMAX.physicalBytes(5)).isEmpty();
    }

    @Test
    void pricesTurboQuantBlocks() {
        assertThat(new TurboQuantPolar(4, 128).physicalBytes(128)).hasValue(76);
        assertThat(new TurboQuantPolarQjl(4, 1, 128).physicalBytes(128)).hasValue(76 + 16);
        assertThatThrownBy(() -> new TurboQuantPolar(5, 128)).hasMessageContaining("bits");
        assertThatThrownBy(() -> new TurboQuantPolar(4, 100)).hasMessageContaining("power of two");
        assertThatThrownBy(() -> new TurboQuantPolarQjl(4, 5, 128)).hasMessageContaining("residual");
    }

    @Test
    void opaqueIsPricedByTheFileAlone() {
        assertThat(new Opaque("X", 999).physicalBytes(123_456)).hasValue(999);
        assertThat(new Opaque("X", 999)).isEqualTo(new Opaque("X", 999)).isNotEqualTo(new Opaque("X", 998));
    }

    @Test
    void denseIsEqualByWidth() {
        assertThat(new Dense(4)).isEqualTo(new Dense(4)).isNotEqualTo(new Dense(2));
        assertThat(Format.dense(DType.INT32).encoding()).isEqualTo(Format.dense(DType.FP32).encoding());
        assertThat(Format.dense(DType.INT4).encoding()).isEqualTo(new Dense(1));
    }

    @Test
    void denseLabelsNameTheWidth() {
        assertThat(new Dense(1).label()).isEqualTo("Dense(1B)");
        assertThat(new Dense(16).label()).isEqualTo("Dense(16B)");
        assertThat(new Dense(17).label()).isEqualTo("Dense(17B)");
        assertThat(new Dense(128).spec()).isEqualTo("Dense(128B)");
        assertThat(TensorEncodings.parse(new Dense(17).spec(), 0)).isEqualTo(new Dense(17));
    }

    @Test
    void formatsRenderAsDtypeSlashEncoding() {
        assertThat(new Format(DType.FP32, BlockQuant.Q4_K)).hasToString("Float32/Q4_K");
        assertThat(Format.dense(DType.FP32)).hasToString("Float32/Dense(4B)");
        assertThat(Format.dense(DType.BF16)).hasToString("BFloat16/Dense(2B)");
        assertThat(new Format(DType.FP32, new TurboQuantPolar(4, 128))).hasToString("Float32/TurboQuant-Polar-4b");
    }

    static Stream<TensorEncoding> everyKindOfEncoding() {
        return Stream.of(
                Stream.of(new Dense(1), new Dense(2), new Dense(4), new Dense(8)),
                Stream.of(BlockQuant.values()),
                Stream.of(PackedEncoding.values()),
                Stream.of(new TurboQuantPolar(4, 128), new TurboQuantPolar(2, 64), new TurboQuantPolarQjl(3, 2, 256)),
                Stream.of(new Opaque("Q3_K", 4242), new Opaque("IQ4_XS", 4242))).flatMap(s -> s);
    }

    @ParameterizedTest
    @MethodSource("everyKindOfEncoding")
    void wireSpecReadsBackToTheSameEncoding(TensorEncoding encoding) {
        assertThat(TensorEncodings.parse(encoding.spec(), 4242)).isEqualTo(encoding);
    }

    @Test
    void anOpaqueQ4KIsNotTheKnownQ4K() {
        assertThat(TensorEncodings.parse("Opaque:Q4_K", 10)).isEqualTo(new Opaque("Q4_K", 10));
        assertThat(TensorEncodings.parse("Q4_K", 10)).isSameAs(BlockQuant.Q4_K);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "Q4_1", "q4_k", "Dense(0B)", "Dense(4)", "TurboQuant-Polar-5b/128", "Opaque"})
    void unknownEncodingsAreRefusedNamingTheValue(String spec) {
        assertThatThrownBy(() -> TensorEncodings.parse(spec, 0))
                .isInstanceOfSatisfying(UnknownEncodingException.class, e -> assertThat(e.value()).isEqualTo(spec))
                .hasMessageContaining("'" + spec + "'");
    }

    @Test
    void configurationCannotNameAnOpaqueEncoding() {
        assertThatThrownBy(() -> TensorEncodings.parseKnown("Opaque:Q3_K")).isInstanceOf(UnknownEncodingException.class);
    }

    @Test
    void dtypesParseByConstantOrDisplayName() {
        assertThat(DType.parse("FP32")).isSameAs(DType.FP32);
        assertThat(DType.parse("BFloat16")).isSameAs(DType.BF16);
        assertThat(DType.INT4.sizeInBytes()).isEqualTo(1);
        assertThatThrownBy(() -> DType.parse("F8_E4M3")).hasMessageContaining("'F8_E4M3'");
    }
}
