package dev.placementaudit.testkit;

import java.util.concurrent.CountDownLatch;
import java.util.stream.Collectors;

/**
 * The three-node cluster of {@link BrokerCluster} as a process of its own, for a benchmark against a replicated
 * cluster: prints {@code cluster ready at HOST:PORT,...}, then {@code pids P1 P2 P3}, and stops every node on SIGTERM.
 */
public final class ClusterMain {
    private ClusterMain() {
    }

    public static void main(String[] args) throws InterruptedException {
        BrokerCluster cluster = BrokerCluster.startEphemeral();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            cluster.close();
            stopped.countDown();
        }, "cluster-shutdown"));
        System.out.println("cluster ready at " + cluster.bootstrapServers());
        System.out.println("pids " + cluster.pids().stream().map(String::valueOf).collect(Collectors.joining(" ")));
        stopped.await();
    }
}
