package dev.placementaudit.service.cli;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Asks the cluster one question before a command commits to it, so that a wrong address or a missing topic is
 * one line within a bound instead of a client retrying in the background for a minute. Kafka's clients treat an
 * unreachable broker as something to wait out, which is right inside a running service and wrong at its start.
 */
public final class KafkaReachability {
    private KafkaReachability() {
    }

    /**
     * @param kafka  client settings, passed through (security settings included)
     * @param topics topics that must exist; empty to check only that a broker answers
     * @throws CommandFailure naming the servers, the topics and the bound when the cluster does not answer in time
     */
    public static void check(Map<String, Object> kafka, Duration timeout, Collection<String> topics) {
        Object servers = kafka.get(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG);
        if (servers == null || servers.toString().isBlank()) {
            throw new CommandFailure("no Kafka cluster configured: pass --bootstrap-servers, set KAFKA_BOOTSTRAP_SERVERS, or kafka.bootstrap.servers");
        }
        Map<String, Object> config = new HashMap<>(kafka);
        int millis = (int) Math.min(Integer.MAX_VALUE, Math.max(1, timeout.toMillis()));
        config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, millis);
        config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, millis);
        config.putIfAbsent(AdminClientConfig.CLIENT_ID_CONFIG, "placement-audit-reachability");
        String where = "Kafka at " + servers;
        Admin admin;
        try {
            admin = Admin.create(config);
        } catch (KafkaException e) {
            throw new CommandFailure("cannot connect to " + where + ": " + rootMessage(e), e);
        }
        try {
            admin.describeCluster().nodes().get(millis, TimeUnit.MILLISECONDS);
            if (!topics.isEmpty()) {
                admin.describeTopics(topics).allTopicNames().get(millis, TimeUnit.MILLISECONDS);
            }
        } catch (TimeoutException e) {
            throw new Unreachable(unanswered(servers, timeout), e);
        } catch (ExecutionException e) {
            throw failure(e.getCause(), kafka, timeout, topics);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommandFailure("interrupted while connecting to " + where, e);
        } finally {
            admin.close(Duration.ZERO);
        }
    }

    /**
     * What a Kafka client's failure means to a user, in the one line {@link #check} gives: for a command that asks its
     * own client first (a consumer's {@code partitionsFor} within the bound) instead of paying for an admin client too.
     */
    public static CommandFailure failure(Throwable e, Map<String, Object> kafka, Duration timeout, Collection<String> topics) {
        String where = "Kafka at " + kafka.get(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG);
        if (e instanceof UnknownTopicOrPartitionException) {
            return new CommandFailure("topic " + String.join(", ", new TreeSet<>(topics)) + " not found on " + where
                    + " (is this the right cluster? the services create their topics when they start)", e);
        }
        if (e instanceof org.apache.kafka.common.errors.TimeoutException) {
            return new Unreachable(unanswered(kafka.get(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG), timeout), e);
        }
        return new CommandFailure("cannot use " + where + ": " + rootMessage(e), e);
    }

    /**
     * No broker answered within the bound: a one-shot command gives up with it; a long-running service waits for the
     * broker instead ({@link dev.placementaudit.service.UntilKafkaAnswers}).
     */
    public static final class Unreachable extends CommandFailure {
        private static final long serialVersionUID = 1L;

        Unreachable(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** No broker answered within the bound, whichever client asked. */
    private static String unanswered(Object servers, Duration timeout) {
        return "no Kafka broker at " + servers + " answered within " + seconds(timeout)
                + " (check the address, that the broker is up, and kafka.security.* settings)";
    }

    static String seconds(Duration timeout) {
        return timeout.toMillis() % 1000 == 0 ? timeout.toSeconds() + " s" : timeout.toMillis() + " ms";
    }

    private static String rootMessage(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
    }
}
