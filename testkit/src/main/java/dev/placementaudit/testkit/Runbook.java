package dev.placementaudit.testkit;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.TopicPartition;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.IntStream;

/**
 * What the runbook "A transaction left hanging" (docs/operations.md) has an operator on call do, done through Admin
 * instead of {@code kafka-transactions.sh}: a test that plays the operator acts on exactly what the worker reported.
 */
public final class Runbook {
    private Runbook() {
    }

    /**
     * For each partition of {@code topics} that the worker's reported {@code problems} name as left hanging, aborts the
     * transaction open there. Returns the partitions aborted on, each with the producer that held it; empty when the
     * problems name no hang.
     */
    public static List<String> abortHanging(KafkaBroker broker, List<String> topics, String problems) {
        List<String> aborted = new ArrayList<>();
        if (!problems.contains("left hanging")) {
            return aborted;
        }
        try (Admin admin = Admin.create(broker.clientConfig())) {
            for (String topic : topics) {
                int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic).partitions().size();
                List<TopicPartition> named = IntStream.range(0, partitions).mapToObj(p -> new TopicPartition(topic, p))
                        .filter(tp -> Pattern.compile(Pattern.quote(tp.toString()) + "(?!\\d)").matcher(problems).find())
                        .toList();
                if (named.isEmpty()) {
                    continue;
                }
                admin.describeProducers(named).all().get(10, TimeUnit.SECONDS).forEach((partition, state) -> state.activeProducers().stream()
                        .filter(p -> p.currentTransactionStartOffset().isPresent())
                        .forEach(p -> {
                            try {
                                admin.abortTransaction(new AbortTransactionSpec(partition, p.producerId(), (short) p.producerEpoch(),
                                        p.coordinatorEpoch().orElse(-1))).all().get(10, TimeUnit.SECONDS);
                                aborted.add(partition + " (pid " + p.producerId() + " epoch " + p.producerEpoch() + " from "
                                        + p.currentTransactionStartOffset().getAsLong() + ")");
                            } catch (Exception e) {
                                throw new IllegalStateException("could not abort the transaction hanging on " + partition, e);
                            }
                        }));
            }
        } catch (IllegalStateException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("could not ask the broker about hanging transactions", e);
        }
        return aborted;
    }
}
