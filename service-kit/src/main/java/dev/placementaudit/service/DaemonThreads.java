package dev.placementaudit.service;

import java.util.concurrent.ThreadFactory;

/**
 * Threads that never hold the JVM up: a service's helpers (decoding ahead, publishing alerts, chain heads) end with
 * it, and its {@code close} decides how long they may finish their work first.
 */
public final class DaemonThreads {
    private DaemonThreads() {
    }

    /** Daemon threads, each named {@code name} (a thread dump then says whose they are). */
    public static ThreadFactory named(String name) {
        return body -> {
            Thread thread = new Thread(body, name);
            thread.setDaemon(true);
            return thread;
        };
    }

    /** Starts {@code body} on a daemon thread named {@code name}. */
    public static Thread start(String name, Runnable body) {
        Thread thread = named(name).newThread(body);
        thread.start();
        return thread;
    }
}
