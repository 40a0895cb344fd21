package dev.placementaudit.service;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Creates a service's topics when missing. Logs of record (decisions, alerts, dead letters) keep everything
 * ({@code retention.ms=-1}): the log is the source of truth a projection is rebuilt from.
 */
public final class TopicSetup {
    private static final Logger LOG = LoggerFactory.getLogger(TopicSetup.class);
    private static final Map<String, String> KEEP_FOREVER = Map.of(TopicConfig.RETENTION_MS_CONFIG, "-1",
            TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_DELETE);

    private TopicSetup() {
    }

    public static void ensure(Map<String, Object> adminConfig, int partitions, short replication, List<String> keptForever,
                              List<String> others) {
        ensure(adminConfig, partitions, replication, keptForever, others, List.of());
    }

    /** Topics that keep the latest record per key (cleanup.policy=compact), such as the store's chain heads. */
    public static void ensureCompacted(Map<String, Object> adminConfig, int partitions, short replication, List<String> compacted) {
        ensure(adminConfig, partitions, replication, List.of(), List.of(), compacted);
    }

    /**
     * Every topic a service needs, with one admin client and one listing (a service's start is mostly its clients'
     * class loading and connections: a restart after a crash should not pay for them twice).
     *
     * @param keptForever topics whose records are kept forever (the log of record)
     * @param others      topics with the cluster's default retention
     * @param compacted   topics that keep the latest record per key
     */
    public static void ensure(Map<String, Object> adminConfig, int partitions, short replication, List<String> keptForever,
                              List<String> others, List<String> compacted) {
        try (Admin admin = Admin.create(adminConfig)) {
            Set<String> existing = admin.listTopics().names().get(30, TimeUnit.SECONDS);
            for (String topic : keptForever) {
                create(admin, existing, new NewTopic(topic, partitions, replication).configs(KEEP_FOREVER));
            }
            for (String topic : others) {
                create(admin, existing, new NewTopic(topic, partitions, replication));
            }
            for (String topic : compacted) {
                create(admin, existing, new NewTopic(topic, partitions, replication)
                        .configs(Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT)));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while creating topics", e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("cannot list or create topics on " + adminConfig.get("bootstrap.servers")
                    + ": " + e.getMessage(), e);
        }
    }

    private static void create(Admin admin, Set<String> existing, NewTopic topic) throws InterruptedException, TimeoutException, ExecutionException {
        if (existing.contains(topic.name())) {
            return;
        }
        try {
            admin.createTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
            LOG.info("created topic {} ({} partitions)", topic.name(), topic.numPartitions());
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
        }
    }
}
