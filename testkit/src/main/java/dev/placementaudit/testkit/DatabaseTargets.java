package dev.placementaudit.testkit;

import org.junit.jupiter.api.extension.Extension;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.extension.TestTemplateInvocationContext;
import org.junit.jupiter.api.extension.TestTemplateInvocationContextProvider;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/** The provider behind {@link DatabaseTest}. */
public final class DatabaseTargets implements TestTemplateInvocationContextProvider {
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(DatabaseTargets.class);

    @Override
    public boolean supportsTestTemplate(ExtensionContext context) {
        return context.getTestMethod().map(m -> m.isAnnotationPresent(DatabaseTest.class)).orElse(false);
    }

    @Override
    public Stream<TestTemplateInvocationContext> provideTestTemplateInvocationContexts(ExtensionContext context) {
        return targets().stream().map(Target::new);
    }

    static List<TestDatabase.Kind> targets() {
        String setting = KafkaFixture.setting("pa.db.targets", "PA_DB_TARGETS", "postgresql,h2");
        return Arrays.stream(setting.split(",")).map(String::trim).filter(s -> !s.isEmpty())
                .map(s -> TestDatabase.Kind.valueOf(s.toUpperCase(Locale.ROOT))).toList();
    }

    /** Opens a fresh database for the given kind. */
    public static TestDatabase open(TestDatabase.Kind kind) {
        return switch (kind) {
            case POSTGRESQL -> PostgresServer.fromEnvironment().createIsolatedSchema();
            case H2 -> H2FileDatabase.create();
        };
    }

    private record Target(TestDatabase.Kind kind) implements TestTemplateInvocationContext {
        @Override
        public String getDisplayName(int invocationIndex) {
            return "[" + kind.name().toLowerCase(Locale.ROOT) + "]";
        }

        @Override
        public List<Extension> getAdditionalExtensions() {
            return List.of(new Resolver(kind));
        }
    }

    private record Resolver(TestDatabase.Kind kind) implements ParameterResolver {
        @Override
        public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
            return parameter.getParameter().getType() == TestDatabase.class;
        }

        @Override
        public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
            // The invocation's own store: closed, and the database dropped, when this invocation ends.
            return context.getStore(NAMESPACE).computeIfAbsent("db", key -> new Owned(open(kind)), Owned.class).database;
        }
    }

    private record Owned(TestDatabase database) implements AutoCloseable {
        @Override
        public void close() {
            database.close();
        }
    }
}
