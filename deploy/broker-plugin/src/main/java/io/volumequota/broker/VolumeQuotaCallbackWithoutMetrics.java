package io.volumequota.broker;

import java.util.Map;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The volume-quota broker callback for Kafka 4.0: the same quotas as
 * {@link VolumeQuotaCallback}, without its metrics.
 *
 * <p>Kafka hands a plugin its metrics only if the configured class implements
 * {@code org.apache.kafka.common.metrics.Monitorable}, an interface that Kafka 4.0 does not
 * have; a class that implements it cannot even be loaded there. This class does not, so a 4.0
 * broker starts with it. On Kafka 4.1 and newer it works as well, but it registers no metrics
 * (and says so in the broker log): use {@link VolumeQuotaCallback} there.
 *
 * <p>Install (Kafka 4.0):
 * {@code client.quota.callback.class=io.volumequota.broker.VolumeQuotaCallbackWithoutMetrics}.
 */
public final class VolumeQuotaCallbackWithoutMetrics extends QuotaCallbackCore {

    private static final Logger LOG = LoggerFactory.getLogger(LOGGER_NAME);
    static final String MONITORABLE = "org.apache.kafka.common.metrics.Monitorable";

    public VolumeQuotaCallbackWithoutMetrics() {
    }

    @Override
    public void configure(Map<String, ?> configs) {
        super.configure(configs);
        if (brokerHasPluginMetrics(VolumeQuotaCallbackWithoutMetrics.class.getClassLoader())) {
            LOG.warn("volume-quota: this broker's Kafka has {} (4.1+), but {} registers no metrics: set"
                    + " client.quota.callback.class=io.volumequota.broker.VolumeQuotaCallback to get them",
                    MONITORABLE, getClass().getName());
        }
    }

    /** Whether {@code Monitorable} (Kafka 4.1+) can be loaded from {@code loader}, without loading it. */
    static boolean brokerHasPluginMetrics(ClassLoader loader) {
        try {
            Class.forName(MONITORABLE, false, loader);
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}
