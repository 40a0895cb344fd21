package dev.placementaudit.store;

import dev.placementaudit.events.ModelLoaded;
import dev.placementaudit.service.DeadLetter;
import dev.placementaudit.store.chain.ChainLog;
import dev.placementaudit.store.chain.ChainVerifier;
import dev.placementaudit.testkit.DatabaseTargets;
import dev.placementaudit.testkit.DatabaseTest;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.KafkaBrokerExtension;
import dev.placementaudit.testkit.TestDatabase;
import dev.placementaudit.testkit.TopicReader;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A second projection of the same log (another store group on another database, say a staging copy) shares the
 * chain and dead-letter topics with the first: each verifies against its own published heads only, neither raises
 * a tamper alarm on the other, and each dead letter says which projection set it aside.
 */
@ExtendWith(KafkaBrokerExtension.class)
class SecondProjectionTest {

    @DatabaseTest
    void aSecondProjectionOnTheSameTopicsRaisesNoAlarmOnTheFirst(KafkaBroker broker, TestDatabase db) throws Exception {
        StoreHarness h = new StoreHarness(broker, db);
        List<ModelLoaded> fleet = IntStream.range(0, 5).boxed()
                .flatMap(d -> List.of(StoreHarness.load("dep-" + d, "r1", 2, d, false), StoreHarness.load("dep-" + d, "r2", 2, 10 + d, true)).stream())
                .toList();
        h.publish(fleet);
        h.publishRaw(h.decisions, "poison".getBytes(StandardCharsets.UTF_8));
        try (TestDatabase second = DatabaseTargets.open(db.kind())) {
            Map<String, String> other = h.settings();
            other.put("store.group.id", h.group + "-staging");
            other.put("store.instance.id", h.group + "-staging-1");
            other.put("store.jdbc.url", second.jdbcUrl());
            other.put("store.jdbc.user", second.user());
            other.put("store.jdbc.password", second.password());
            try (AuditStore first = h.start()) {
                await().atMost(Duration.ofSeconds(60)).until(() -> h.count("SELECT COUNT(*) FROM chain_entries") == 10);
            }
            try (AuditStore staging = h.start(other)) {
                await().atMost(Duration.ofSeconds(60)).until(() -> count(second, "SELECT COUNT(*) FROM chain_entries") == 10);
            }

            ChainLog.Published firstHeads = await().atMost(Duration.ofSeconds(30)).until(
                    () -> ChainLog.read(broker.clientConfig(), h.chain, h.group, Duration.ofSeconds(10)), p -> p.heads().size() == 5);
            ChainLog.Published stagingHeads = ChainLog.read(broker.clientConfig(), h.chain, h.group + "-staging", Duration.ofSeconds(10));
            try (Connection c = db.connect()) {
                ChainVerifier.Report report = ChainVerifier.verify(c, Optional.empty(), Optional.of(firstHeads));
                assertThat(report.breaks()).as("the first projection, untouched").isEmpty();
                assertThat(report.chains()).allSatisfy(chain -> assertThat(chain.publishedHeadChecked()).isTrue());
            }
            try (Connection c = DriverManager.getConnection(second.jdbcUrl(), second.user(), second.password())) {
                assertThat(ChainVerifier.verify(c, Optional.empty(), Optional.of(stagingHeads)).breaks()).isEmpty();
            }
            assertThat(firstHeads.otherProjections()).containsExactly(h.group + "-staging");
            assertThat(stagingHeads.otherProjections()).containsExactly(h.group);
        }
        List<ConsumerRecord<byte[], byte[]>> letters = TopicReader.readCommitted(broker, h.decisions + ".dlq", 2);
        assertThat(letters).extracting(r -> new String(r.headers().lastHeader(DeadLetter.PROJECTION).value(), StandardCharsets.UTF_8))
                .containsExactlyInAnyOrder(h.group, h.group + "-staging");
    }

    private static long count(TestDatabase db, String sql) throws Exception {
        try (Connection c = DriverManager.getConnection(db.jdbcUrl(), db.user(), db.password()); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
