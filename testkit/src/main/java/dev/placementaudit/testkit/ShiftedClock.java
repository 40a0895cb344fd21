package dev.placementaudit.testkit;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/**
 * The system's UTC clock moved on by however much a test has shifted it: time still passes (leases lapse, polls time
 * out), and a test can make a minute pass at once to see what is held for a minute go out.
 */
public final class ShiftedClock extends Clock {
    private volatile Duration shift = Duration.ZERO;

    public void shift(Duration by) {
        shift = shift.plus(by);
    }

    @Override
    public Instant instant() {
        return Instant.now().plus(shift);
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return this;
    }
}
