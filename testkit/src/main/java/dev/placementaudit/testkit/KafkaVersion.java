package dev.placementaudit.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/** The Kafka version of the clients on the class path (and of the in-JVM broker, from the same release), as its jar says. */
public final class KafkaVersion {
    private KafkaVersion() {
    }

    public static String current() {
        try (InputStream in = KafkaVersion.class.getClassLoader().getResourceAsStream("kafka/kafka-version.properties")) {
            if (in == null) {
                throw new IllegalStateException("kafka/kafka-version.properties is not on the class path: no kafka-clients jar?");
            }
            Properties properties = new Properties();
            properties.load(in);
            return properties.getProperty("version");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the Kafka clients' version", e);
        }
    }
}
