package io.volumequota.broker;

/**
 * Tells a produce request from the broker's second look-up of the same request. The broker's
 * {@code ClientQuotaManager} resolves a client's sensors through {@code quotaMetricTags} when it
 * records a request ({@code maybeRecordAndGetThrottleTimeMs}) and again, for a throttled one, in
 * {@code throttle()}, right after, on the same thread and for the same principal and client id
 * (KafkaApis' produce response callback does both). Counting both would double the request
 * count of throttled principals and halve their measured request size.
 *
 * <p>Cheap on the common path: a thread-local compare. Only a look-up that repeats the previous
 * one of its thread walks a few stack frames to see whether {@code ClientQuotaManager.throttle}
 * (Java from Kafka 4.1, Scala {@code kafka.server.ClientQuotaManager} in 4.0) asked.
 */
final class SecondLookup {

    private static final StackWalker WALKER = StackWalker.getInstance();
    /** The callers above quotaMetricTags that matter are within this many frames. */
    private static final int FRAMES = 8;

    /** The principal and client id this thread counted last ({@code [principal, clientId]}). */
    private final ThreadLocal<String[]> lastCounted = ThreadLocal.withInitial(() -> new String[2]);

    /** Whether this look-up is a request to count (not the throttle look-up of the one just counted). */
    boolean isNewRequest(String principal, String clientId) {
        String[] last = lastCounted.get();
        if (principal.equals(last[0]) && clientId.equals(last[1]) && askedByThrottle()) {
            last[0] = null; // a third look-up is a new request again
            last[1] = null;
            return false;
        }
        last[0] = principal;
        last[1] = clientId;
        return true;
    }

    static boolean askedByThrottle() {
        return WALKER.walk(frames -> frames.limit(FRAMES).anyMatch(frame ->
                frame.getMethodName().equals("throttle") && frame.getClassName().endsWith(".ClientQuotaManager")));
    }
}
