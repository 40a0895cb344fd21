package dev.placementaudit.bench;

import dev.placementaudit.service.DaemonThreads;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.locks.LockSupport;

/**
 * A TCP forwarder that delays every byte by half a round trip in each direction: the network hop between clients
 * and broker that a benchmark on one machine does not have. {@code LatencyProxy listenPort targetPort rttMillis}.
 *
 * <p>Why: over loopback a Kafka round trip costs microseconds, so a transaction's commit (AddOffsetsToTxn,
 * TxnOffsetCommit, EndTxn, markers) is nearly free, which is true of no deployment. Delay only, no bandwidth
 * limit: each chunk read is written on after {@code rtt/2}, in order, so a stream's throughput is unchanged and
 * only its round trips get longer. The broker advertises this proxy's port, so every connection, its own
 * inter-broker one for transaction markers included, crosses the "network". Linux's netem would be the usual tool;
 * this machine's kernel has no sch_netem.
 */
public record LatencyProxy(int listenPort, int targetPort, long oneWayNanos) {
    private static final int CHUNK = 64 * 1024;

    public static void main(String[] args) throws IOException {
        if (args.length != 3) {
            throw new IllegalArgumentException("usage: LatencyProxy listenPort targetPort rttMillis, got " + Arrays.toString(args));
        }
        new LatencyProxy(Integer.parseInt(args[0]), Integer.parseInt(args[1]), (long) (Double.parseDouble(args[2]) * 1e6 / 2)).serve();
    }

    private void serve() throws IOException {
        try (ServerSocket server = new ServerSocket()) {
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress("localhost", listenPort));
            System.out.printf("proxy ready: localhost:%d -> localhost:%d, %.2f ms round trip added%n", listenPort, targetPort, oneWayNanos * 2 / 1e6);
            while (true) {
                Socket client = server.accept();
                DaemonThreads.start("proxy-connect", () -> connect(client));
            }
        }
    }

    private void connect(Socket client) {
        try {
            Socket broker = new Socket("localhost", targetPort);
            client.setTcpNoDelay(true);
            broker.setTcpNoDelay(true);
            pipe(client, broker);
            pipe(broker, client);
        } catch (IOException e) {
            // The broker is not up yet, or went away: the client sees a closed connection and retries, as over a network.
            closeQuietly(client);
        }
    }

    /** One direction: a reader stamps each chunk with when it may leave, a writer sends it then. */
    private void pipe(Socket from, Socket to) throws IOException {
        BlockingQueue<Chunk> inFlight = new LinkedBlockingQueue<>();
        InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream();
        DaemonThreads.start("proxy-read", () -> {
            byte[] buffer = new byte[CHUNK];
            try {
                for (int read = in.read(buffer); read >= 0; read = in.read(buffer)) {
                    // Stamped as it arrives; copied to its size, since most reads are a small request or response.
                    inFlight.add(new Chunk(System.nanoTime() + oneWayNanos, Arrays.copyOf(buffer, read)));
                }
            } catch (IOException e) {
                // the connection closed: end this direction
            }
            inFlight.add(Chunk.END);
        });
        DaemonThreads.start("proxy-write", () -> {
            try {
                for (Chunk chunk = inFlight.take(); chunk != Chunk.END; chunk = inFlight.take()) {
                    for (long wait = chunk.due - System.nanoTime(); wait > 0; wait = chunk.due - System.nanoTime()) {
                        LockSupport.parkNanos(wait);
                    }
                    out.write(chunk.bytes);
                }
            } catch (IOException | InterruptedException e) {
                // the connection closed: end this direction
            }
            closeQuietly(from);
            closeQuietly(to);
        });
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException e) {
            // already closed
        }
    }

    private record Chunk(long due, byte[] bytes) {
        static final Chunk END = new Chunk(0, new byte[0]);
    }
}
