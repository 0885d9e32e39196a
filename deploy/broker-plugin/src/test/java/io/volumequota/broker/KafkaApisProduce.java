package io.volumequota.broker;

import org.apache.kafka.network.Session;
import org.apache.kafka.server.quota.ClientQuotaManager;
import org.apache.kafka.server.quota.ThrottleCallback;

/**
 * What {@code KafkaApis.handleProduceRequest} 4.3.1 does with the PRODUCE quota manager once a
 * request is appended (its response callback): {@code maybeRecordAndGetThrottleTimeMs(session,
 * clientId, requestSize, now)}, then, when the result is > 0 (and larger than the request-quota
 * throttle, which the simulations do not set), {@code RequestHandlerHelper.throttle}, which
 * calls {@code ClientQuotaManager.throttle(clientId, session, callback, throttleMs)}. Both look
 * up the client's sensors through {@code getOrCreateQuotaSensors}, so a throttled request
 * reaches the callback's {@code quotaMetricTags} twice, as in a broker.
 */
final class KafkaApisProduce {

    /** The channel mute: the simulations track mutes themselves, from the returned throttle. */
    private static final ThrottleCallback NO_CHANNEL = new ThrottleCallback() {
        @Override
        public void startThrottling() {
        }

        @Override
        public void endThrottling() {
        }
    };

    private KafkaApisProduce() {
    }

    /** Records one produce request of {@code bytes} and throttles it as the broker does; returns the throttle. */
    static int produce(ClientQuotaManager manager, Session session, String clientId, double bytes, long nowMs) {
        int throttleMs = manager.maybeRecordAndGetThrottleTimeMs(session, clientId, bytes, nowMs);
        if (throttleMs > 0) {
            manager.throttle(clientId, session, NO_CHANNEL, throttleMs);
        }
        return throttleMs;
    }
}
