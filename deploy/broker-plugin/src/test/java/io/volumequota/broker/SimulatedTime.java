package io.volumequota.broker;

import java.time.Duration;
import java.util.function.Supplier;
import org.apache.kafka.common.utils.Time;

/** The broker's clock in the simulations: Kafka's quota managers and our callback both read it. */
final class SimulatedTime implements Time {
    private final TestSupport.MutableClock clock;

    SimulatedTime(TestSupport.MutableClock clock) {
        this.clock = clock;
    }

    @Override
    public long milliseconds() {
        return clock.millis();
    }

    @Override
    public long nanoseconds() {
        return clock.millis() * 1_000_000L;
    }

    @Override
    public void sleep(long ms) {
        clock.advance(Duration.ofMillis(ms));
    }

    @Override
    public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
        throw new UnsupportedOperationException();
    }
}
