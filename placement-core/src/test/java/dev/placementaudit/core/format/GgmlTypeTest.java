package dev.placementaudit.core.format;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class GgmlTypeTest {

    @Test
    void looksUpTypesByTheirGgufId() {
        assertThat(GgmlType.byId(12)).contains(GgmlType.Q4_K);
        assertThat(GgmlType.byId(30)).contains(GgmlType.BF16);
        assertThat(GgmlType.byId(36)).contains(GgmlType.I2_S);
        assertThat(GgmlType.byId(4)).isEmpty();
        assertThat(GgmlType.byId(40)).isEmpty();
    }

    @Test
    void mapsDenseTypesToTheirDtype() {
        assertThat(GgmlType.F32.toFormat(0)).isEqualTo(Format.dense(DType.FP32));
        assertThat(GgmlType.F16.toFormat(0)).isEqualTo(Format.dense(DType.FP16));
        assertThat(GgmlType.I64.toFormat(0)).isEqualTo(Format.dense(DType.INT64));
    }

    @Test
    void mapsModelledQuantizationsToFp32WithTheirEncoding() {
        assertThat(GgmlType.Q4_K.toFormat(0)).isEqualTo(new Format(DType.FP32, BlockQuant.Q4_K));
        assertThat(GgmlType.TQ2_0.toFormat(0)).isEqualTo(new Format(DType.FP32, BlockQuant.TQ2_0));
    }

    @Test
    void everyOtherTypeBecomesOpaquePricedByTheFile() {
        assertThat(GgmlType.Q3_K.toFormat(7_208_960)).isEqualTo(new Format(DType.FP32, new Opaque("Q3_K", 7_208_960)));
        assertThat(GgmlType.MXFP4.toFormat(17)).isEqualTo(new Format(DType.FP32, new Opaque("MXFP4", 17)));
    }

    @Test
    void fileBytesAgreeWithTheEncodingsOwnPricingForWholeBlocks() {
        for (GgmlType type : GgmlType.values()) {
            Format format = type.toFormat(type.bytesFor(4096));
            assertThat(format.physicalBytes(4096)).as(type.name()).hasValue(type.bytesFor(4096));
        }
    }

    @Test
    void knowsAPartialBlock() {
        assertThat(GgmlType.Q4_K.fillsWholeBlocks(512)).isTrue();
        assertThat(GgmlType.Q4_K.fillsWholeBlocks(500)).isFalse();
    }
}
