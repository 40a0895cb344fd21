package dev.placementaudit.store;

import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.testkit.KafkaBroker;
import dev.placementaudit.testkit.TopicReader;
import org.apache.kafka.clients.consumer.ConsumerRecord;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Function;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/** Store instances draining an outbox (alerts, incidents) at once, as their sweeps do, and what reached the topic. */
public final class Outboxes {
    private Outboxes() {
    }

    /**
     * Publishes with {@code publish} (a publisher's {@code publishPending}) until it publishes nothing and {@code unpublished}
     * (a count query) finds none left; how many it published.
     */
    public static Callable<Integer> drain(Callable<Integer> publish, AuditDatabase database, String unpublished) {
        return () -> {
            int total = 0;
            while (true) {
                int published = publish.call();
                total += published;
                if (published == 0 && count(database, unpublished) == 0) {
                    return total;
                }
            }
        };
    }

    /** {@code count} events on {@code topic}, read_committed, one for each id {@code idOf} gives. */
    public static void assertPublishedOnceEach(KafkaBroker broker, String topic, int count, Function<byte[], String> idOf) {
        List<ConsumerRecord<byte[], byte[]>> published = TopicReader.readCommitted(broker, topic, count);
        Map<String, Long> perId = published.stream().collect(Collectors.groupingBy(r -> idOf.apply(r.value()), Collectors.counting()));
        assertThat(published).hasSize(count);
        assertThat(perId).hasSize(count).allSatisfy((id, times) -> assertThat(times).as(id).isOne());
    }

    private static long count(AuditDatabase database, String sql) throws SQLException {
        try (Connection c = database.dataSource().getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
