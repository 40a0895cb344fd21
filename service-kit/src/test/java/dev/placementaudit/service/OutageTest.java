package dev.placementaudit.service;

import dev.placementaudit.testkit.ShiftedClock;
import org.junit.jupiter.api.Test;
import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.LegacyAbstractLogger;
import org.slf4j.helpers.MessageFormatter;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** An outage read as an operator reads it: where it starts, a reminder while it lasts, where it ends; the rest at DEBUG (time shifted, not waited for). */
class OutageTest {

    @Test
    void anOutageIsAWarnWhenItStartsAReminderEveryFiveMinutesAndAnInfoWhenItEnds() {
        Recording log = new Recording();
        ShiftedClock clock = new ShiftedClock();
        Outage outage = new Outage(log, "reconciling", clock);

        outage.ended();
        assertThat(log.lines).as("nothing said of a success with no failure before it").isEmpty();
        for (int i = 0; i < 30; i++) {
            outage.failed("TimeoutException: broker away");
            clock.shift(Duration.ofSeconds(1));
        }
        assertThat(outage.ongoing()).isTrue();
        clock.shift(Duration.ofMinutes(5));
        outage.failed("TimeoutException: broker away");
        outage.ended();
        outage.ended();

        assertThat(log.lines.stream().filter(l -> !l.startsWith("DEBUG")).toList()).containsExactly(
                "WARN reconciling failed (TimeoutException: broker away); repeats are logged at DEBUG until it works",
                "WARN reconciling still fails after 31 tries over 330 s (TimeoutException: broker away)",
                "INFO reconciling works again after 31 failed tries over 330 s");
        assertThat(log.lines).filteredOn(l -> l.startsWith("DEBUG")).hasSize(29);
        assertThat(outage.ongoing()).isFalse();

        outage.failed("again");
        assertThat(log.lines.get(log.lines.size() - 1)).as("a new outage is said anew").startsWith("WARN reconciling failed (again)");
    }

    private static final class Recording extends LegacyAbstractLogger {
        final List<String> lines = new ArrayList<>();

        @Override
        protected String getFullyQualifiedCallerName() {
            return null;
        }

        @Override
        protected void handleNormalizedLoggingCall(Level level, Marker marker, String pattern, Object[] arguments, Throwable throwable) {
            lines.add(level + " " + MessageFormatter.basicArrayFormat(pattern, arguments));
        }

        @Override
        public boolean isTraceEnabled() {
            return true;
        }

        @Override
        public boolean isDebugEnabled() {
            return true;
        }

        @Override
        public boolean isInfoEnabled() {
            return true;
        }

        @Override
        public boolean isWarnEnabled() {
            return true;
        }

        @Override
        public boolean isErrorEnabled() {
            return true;
        }
    }
}
