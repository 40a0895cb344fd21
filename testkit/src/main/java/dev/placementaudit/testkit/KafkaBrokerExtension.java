package dev.placementaudit.testkit;

import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Injects a {@link KafkaBroker} into test constructors and methods. One broker per test JVM: it is kept in the
 * root store and closed when the run ends, so every class in a module shares its start-up cost.
 */
public final class KafkaBrokerExtension implements ParameterResolver {
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(KafkaBrokerExtension.class);

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> type = parameter.getParameter().getType();
        return type == KafkaBroker.class || type == EmbeddedKafkaBroker.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        KafkaBroker broker = context.getRoot().getStore(NAMESPACE)
                .computeIfAbsent("broker", key -> new SharedBroker(KafkaFixture.start()), SharedBroker.class).broker;
        if (parameter.getParameter().getType() == EmbeddedKafkaBroker.class && !(broker instanceof EmbeddedKafkaBroker)) {
            throw new IllegalStateException("this test needs the in-JVM broker (it stops and restarts it), but the run uses "
                    + broker.getClass().getSimpleName() + " at " + broker.bootstrapServers());
        }
        return broker;
    }

    /** Closed by JUnit with the root store. */
    private record SharedBroker(KafkaBroker broker) implements AutoCloseable {
        @Override
        public void close() {
            broker.close();
        }
    }
}
