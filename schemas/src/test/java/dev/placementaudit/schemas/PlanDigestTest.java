package dev.placementaudit.schemas;

import java.util.List;

import dev.placementaudit.events.ReasonCode;

import dev.placementaudit.events.AllocationDecided;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PlanDigestTest {
    private static final Object[] EMBED = {0, "token_embd.weight", "Q4_K", "Q4_K", "Q4_K", 1_000L, 562L, false, "Q4_K", 562L, "MAPPED",
            "GLOBAL", true, "MAPPED_OK", "MAPPED_OK", "", "token_embd.weight: mapped"};
    private static final Object[] NORM = {1, "output_norm.weight", "F32", "dense", "F32", 4L, 16L, false, "F32", 16L, "HEAP",
            "GLOBAL", false, "BELOW_THRESHOLD", "BELOW_THRESHOLD", "", "output_norm.weight: small"};

    @Test
    void isSha256OverTheDocumentedEncoding() throws Exception {
        // The encoding as the class documents it, written out by hand.
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        text(bytes, "placement-plan/1");
        for (Object[] tensor : new Object[][]{EMBED, NORM}) {
            for (Object value : tensor) {
                if (value instanceof String s) {
                    text(bytes, s);
                } else if (value instanceof Boolean b) {
                    bytes.write(3);
                    bytes.write(b ? 1 : 0);
                } else {
                    bytes.write(2);
                    bytes.writeBytes(ByteBuffer.allocate(8).putLong(((Number) value).longValue()).array());
                }
            }
        }
        bytes.write(2);
        bytes.writeBytes(ByteBuffer.allocate(8).putLong(2).array());
        String expected = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes.toByteArray()));

        assertThat(new PlanDigest().tensor(EMBED).tensor(NORM).digest()).isEqualTo(expected);
    }

    @Test
    void orderValuesAndBoundariesAllCount() {
        String plan = new PlanDigest().tensor(EMBED).tensor(NORM).digest();
        assertThat(new PlanDigest().tensor(NORM).tensor(EMBED).digest()).as("tensor order").isNotEqualTo(plan);
        assertThat(new PlanDigest().tensor(EMBED).digest()).as("a tensor fewer").isNotEqualTo(plan);
        Object[] moved = NORM.clone();
        moved[10] = "OFF_HEAP";
        assertThat(new PlanDigest().tensor(EMBED).tensor(moved).digest()).as("another domain").isNotEqualTo(plan);
        // Two texts that concatenate alike still differ: each carries its length.
        Object[] shifted = NORM.clone();
        shifted[15] = "o";
        shifted[16] = "utput_norm.weight: small";
        Object[] unshifted = NORM.clone();
        unshifted[15] = "";
        unshifted[16] = "output_norm.weight: small";
        assertThat(new PlanDigest().tensor(shifted).digest()).isNotEqualTo(new PlanDigest().tensor(unshifted).digest());
        // The worker's value-by-value path and the boxed path meet.
        PlanDigest parts = new PlanDigest();
        parts.integer(0).text("token_embd.weight").text("Q4_K").text("Q4_K").text("Q4_K").integer(1_000).integer(562).bool(false).text("Q4_K")
                .integer(562).text("MAPPED").text("GLOBAL").bool(true).text("MAPPED_OK").text("MAPPED_OK").text("")
                .text("token_embd.weight".getBytes(StandardCharsets.UTF_8), ": mapped".getBytes(StandardCharsets.UTF_8));
        parts.endTensor();
        assertThat(parts.digest()).isEqualTo(new PlanDigest().tensor(EMBED).digest());
    }

    @Test
    void carriesIsTheValuesComparedOneByOne() {
        AllocationDecided d = Samples.allocationDecided();
        Object[] plan = PlanDigest.values(d);
        assertThat(PlanDigest.carries(plan, d)).isTrue();
        AllocationDecided another = Samples.allocationDecided();
        another.put("decisionId", "d-2");
        another.put("loadId", "another load");
        another.put("host", "node-08");
        assertThat(PlanDigest.carries(plan.clone(), another)).as("what is load-specific is not the plan's").isTrue();
        for (int i = 0; i < plan.length; i++) {
            Object[] other = plan.clone();
            other[i] = other[i] instanceof String text ? text + "x" : other[i] instanceof Boolean b ? !b
                    : other[i] instanceof Integer n ? n + 1 : (Long) other[i] + 1;
            assertThat(PlanDigest.carries(other, d)).as(PlanDigest.COLUMNS.get(i)).isFalse();
        }
        AllocationDecided twoBlockers = Samples.allocationDecided();
        twoBlockers.put("mappingBlockers", List.of(ReasonCode.REENCODED_AT_LOAD, ReasonCode.MAPPED_OK));
        assertThat(PlanDigest.carries(PlanDigest.values(twoBlockers), twoBlockers)).isTrue();
        assertThat(PlanDigest.carries(plan, twoBlockers)).as("blockers differ").isFalse();
    }

    @Test
    void refusesATensorOfTheWrongShape() {
        assertThatThrownBy(() -> new PlanDigest().tensor(0, "x")).hasMessageContaining("17 values");
        Object[] object = EMBED.clone();
        object[1] = new Object();
        assertThatThrownBy(() -> new PlanDigest().tensor(object)).hasMessageContaining("text, an integer or a boolean");
    }

    private static void text(ByteArrayOutputStream out, String s) {
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        out.write(1);
        out.writeBytes(ByteBuffer.allocate(4).putInt(utf8.length).array());
        out.writeBytes(utf8);
    }
}
