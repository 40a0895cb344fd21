package dev.placementaudit.testkit;

import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * The in-JVM broker as a process of its own: {@code BrokerMain [dir] [port] [controllerPort] [advertisedPort]}, the
 * last for a proxy in front of it. For benchmarks, where
 * a broker sharing the measured JVM's heap and GC would distort the numbers, and for local development.
 * Keeps its log in {@code dir} across restarts; stops cleanly on SIGTERM.
 *
 * <p>One node of a cluster of several ({@link BrokerCluster}) is told which by system properties:
 * {@code pa.broker.node-id}, {@code pa.broker.voters} (every controller, {@code id@host:port,...}),
 * {@code pa.broker.cluster-id} and {@code pa.broker.replicas}.
 */
public final class BrokerMain {
    private BrokerMain() {
    }

    public static void main(String[] args) throws InterruptedException {
        Path dir = Path.of(args.length > 0 ? args[0] : "target/kafka");
        int port = args.length > 1 ? Integer.parseInt(args[1]) : 9092;
        int controllerPort = args.length > 2 ? Integer.parseInt(args[2]) : port + 1;
        int advertisedPort = args.length > 3 ? Integer.parseInt(args[3]) : port;
        String voters = System.getProperty("pa.broker.voters");
        EmbeddedKafkaBroker broker = voters == null
                ? EmbeddedKafkaBroker.startPersistent(dir, port, controllerPort, advertisedPort)
                : EmbeddedKafkaBroker.startPersistent(dir, port, controllerPort, advertisedPort, new EmbeddedKafkaBroker.ClusterNode(
                        Integer.getInteger("pa.broker.node-id"), voters, System.getProperty("pa.broker.cluster-id"),
                        Integer.getInteger("pa.broker.replicas", 3)));
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            broker.close();
            stopped.countDown();
        }, "broker-shutdown"));
        System.out.println("broker ready at " + broker.bootstrapServers() + " (log in " + dir.toAbsolutePath() + ")");
        stopped.await();
    }
}
