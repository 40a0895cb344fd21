package dev.placementaudit.store.db;

import dev.placementaudit.service.DaemonThreads;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * A running store keeps the months ahead of {@code load_rows} created ({@link LoadPartitions#ensureAhead}): at its
 * start and every six hours, so that a month's loads never land in the default partition because nobody made theirs.
 * A failure is logged and tried again at the next round; loads go on landing (in the default partition at worst).
 */
public final class PartitionUpkeep implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PartitionUpkeep.class);
    static final Duration EVERY = Duration.ofHours(6);

    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("audit-store-partitions"));

    private PartitionUpkeep(DataSource database, Clock clock) {
        timer.scheduleWithFixedDelay(() -> run(database, clock), 0, EVERY.toMinutes(), TimeUnit.MINUTES);
    }

    public static PartitionUpkeep start(DataSource database, Clock clock) {
        return new PartitionUpkeep(database, clock);
    }

    /** One round; what it created, logged. */
    public static List<String> run(DataSource database, Clock clock) {
        try (Connection c = database.getConnection()) {
            List<String> created = LoadPartitions.ensureAhead(c, clock.instant());
            if (!created.isEmpty()) {
                LOG.info("created the partitions {} of load_rows (a month each, {} months ahead)", created, LoadPartitions.MONTHS_AHEAD);
            }
            return created;
        } catch (SQLException | RuntimeException e) {
            LOG.warn("could not create the months ahead of load_rows (tried again in {} h; meanwhile loads land in load_rows_default): {}",
                    EVERY.toHours(), e.toString());
            return List.of();
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
