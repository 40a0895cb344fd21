package dev.placementaudit.schemas;

import org.apache.avro.Schema;
import org.apache.avro.SchemaCompatibility;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** The contract rule: a schema only ever evolves compatibly, both ways, with every version before it. */
class SchemaHistoryTest {

    @ParameterizedTest
    @EnumSource(EventType.class)
    void newestVersionIsWhatTheGeneratedClassUses(EventType type) {
        List<Schema> history = type.history();
        // The generated schema carries avro.java.string hints; strip them and the rest must match exactly.
        Schema generated = new Schema.Parser().parse(type.currentSchema().toString().replace(",\"avro.java.string\":\"String\"", ""));

        assertThat(generated).isEqualTo(history.get(history.size() - 1));
        assertThat(EventSerde.fingerprint(type.currentSchema())).isEqualTo(EventSerde.fingerprint(history.get(history.size() - 1)));
    }

    @ParameterizedTest
    @EnumSource(EventType.class)
    void everyVersionReadsEveryEarlierOneAndTheOtherWayRound(EventType type) {
        List<Schema> history = type.history();
        for (int newer = 0; newer < history.size(); newer++) {
            for (int older = 0; older < newer; older++) {
                assertCompatible(history.get(newer), history.get(older), type, newer + 1, older + 1);
                assertCompatible(history.get(older), history.get(newer), type, older + 1, newer + 1);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(EventType.class)
    void everyVersionHasItsOwnFingerprint(EventType type) {
        Set<Long> fingerprints = new HashSet<>();
        type.history().forEach(schema -> assertThat(fingerprints.add(EventSerde.fingerprint(schema))).isTrue());
    }

    @ParameterizedTest
    @EnumSource(EventType.class)
    void historyIsOfTheRightRecord(EventType type) {
        assertThat(type.history()).allSatisfy(schema ->
                assertThat(schema.getFullName()).isEqualTo("dev.placementaudit.events." + type.schemaName()));
    }

    private static void assertCompatible(Schema reader, Schema writer, EventType type, int readerVersion, int writerVersion) {
        SchemaCompatibility.SchemaPairCompatibility result = SchemaCompatibility.checkReaderWriterCompatibility(reader, writer);
        assertThat(result.getType())
                .as("%s v%d reading v%d: %s", type.schemaName(), readerVersion, writerVersion, result.getDescription())
                .isEqualTo(SchemaCompatibility.SchemaCompatibilityType.COMPATIBLE);
    }
}
