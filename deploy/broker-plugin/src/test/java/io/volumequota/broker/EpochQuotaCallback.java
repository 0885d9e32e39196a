package io.volumequota.broker;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.Sanitizer;
import org.apache.kafka.server.quota.ClientQuotaCallback;
import org.apache.kafka.server.quota.ClientQuotaEntity;
import org.apache.kafka.server.quota.ClientQuotaType;

/**
 * Test-only prototype of a quota epoch (docs/broker-plugin.md, "A quota epoch instead of rule 1"):
 * the production callback, with one more PRODUCE metric tag, {@code quota-epoch}, that is bumped
 * for a principal whenever its quota falls below {@code 1 / dropRatio} of the highest quota in
 * force since its epoch began (or, {@code onTarget}, whenever the decision's target falls so).
 * Each such drop gets a fresh sensor, whose rate window Kafka pads to its full length, so nothing
 * the old quota let in counts under the new one.
 *
 * <p>The engine reads the byte rate of the current epoch's sensor only (0 until that sensor
 * exists), so rule 1 ("follow the window down", {@code B / (W + T_step)}) sees an empty window
 * at every bump and does not carry the old quota's bytes. When a tick bumps an epoch, the engine
 * ticks once more on the new, empty window, 1 ms later on its own clock (so that the demand it
 * measured when the target fell, for rule 3, stays the one from before the bump). With
 * {@code dropRatio = +inf} no epoch is ever bumped: the production behaviour.
 */
final class EpochQuotaCallback implements ClientQuotaCallback {

    static final String EPOCH_TAG = "quota-epoch";

    /** One principal's epoch and the highest value watched since it began. */
    private static final class Epoch {
        int number;
        double highest = Double.NaN;
    }

    private final VolumeQuotaCallback delegate;
    private final double dropRatio;
    private final boolean onTarget;
    private final AtomicLong skewMs;
    private final Map<String, Epoch> epochs = new HashMap<>(); // by sanitised user
    private Metrics metrics;
    private int bumps;

    private EpochQuotaCallback(TestSupport.MutableClock clock, double dropRatio, boolean onTarget, AtomicLong skewMs) {
        this.dropRatio = dropRatio;
        this.onTarget = onTarget;
        this.skewMs = skewMs;
        this.delegate = new VolumeQuotaCallback(clock, () -> clock.millis() + skewMs.get(), this::currentEpochRates);
    }

    /**
     * @param dropRatio bump the epoch when the watched value falls below its highest in the epoch / dropRatio
     *                  (+inf: never)
     * @param onTarget  watch the decision's target (every principal bumps together) instead of each
     *                  principal's own quota
     */
    static EpochQuotaCallback create(TestSupport.MutableClock clock, double dropRatio, boolean onTarget) {
        return new EpochQuotaCallback(clock, dropRatio, onTarget, new AtomicLong());
    }

    /** The broker's metrics, for the byte rates of the current epochs' sensors. */
    void attach(Metrics brokerMetrics) {
        this.metrics = brokerMetrics;
    }

    /** Epochs bumped so far, all principals. */
    int bumps() {
        return bumps;
    }

    /** The poll the simulations run every 250 ms: a tick, and one more on the new windows after a bump. */
    void reload() {
        delegate.reload();
        boolean bumped = false;
        for (Map.Entry<String, Epoch> entry : epochs.entrySet()) {
            Epoch epoch = entry.getValue();
            double value = watched(entry.getKey());
            if (!Double.isNaN(epoch.highest) && value < epoch.highest / dropRatio) {
                epoch.number++;
                epoch.highest = Double.NaN;
                bumps++;
                bumped = true;
            } else {
                epoch.highest = Double.isNaN(epoch.highest) ? value : Math.max(epoch.highest, value);
            }
        }
        if (bumped) {
            skewMs.incrementAndGet();
            delegate.reload();
            for (Map.Entry<String, Epoch> entry : epochs.entrySet()) {
                if (Double.isNaN(entry.getValue().highest)) {
                    entry.getValue().highest = watched(entry.getKey());
                }
            }
        }
    }

    /** What a bump watches: the decision's target, or the principal's own quota. */
    private double watched(String sanitizedUser) {
        if (onTarget) {
            return delegate.engine().targetQuota();
        }
        Double quota = delegate.quotaLimit(ClientQuotaType.PRODUCE, tags(sanitizedUser, ""));
        return quota == null ? Double.POSITIVE_INFINITY : quota;
    }

    /** The byte rate of each principal's current epoch's sensor; 0 while that sensor does not exist yet. */
    private Map<String, Double> currentEpochRates() {
        Map<String, Double> rates = new HashMap<>();
        if (metrics == null) {
            return rates;
        }
        for (Map.Entry<String, Epoch> entry : epochs.entrySet()) {
            rates.put(Sanitizer.desanitize(entry.getKey()), 0.0);
        }
        for (Map.Entry<MetricName, KafkaMetric> metric : metrics.metrics().entrySet()) {
            MetricName name = metric.getKey();
            Map<String, String> tags = name.tags();
            Epoch epoch = epochs.get(tags.get("user"));
            if (name.name().equals("byte-rate") && name.group().equals("Produce") && epoch != null
                    && "".equals(tags.get("client-id")) && String.valueOf(epoch.number).equals(tags.get(EPOCH_TAG))) {
                rates.put(Sanitizer.desanitize(tags.get("user")), (Double) metric.getValue().metricValue());
            }
        }
        return rates;
    }

    private static Map<String, String> tags(String sanitizedUser, String clientId) {
        Map<String, String> tags = new LinkedHashMap<>(4);
        tags.put("user", sanitizedUser);
        tags.put("client-id", clientId);
        return tags;
    }

    @Override
    public void configure(Map<String, ?> configs) {
        delegate.configure(configs);
    }

    @Override
    public Map<String, String> quotaMetricTags(ClientQuotaType quotaType, KafkaPrincipal principal, String clientId) {
        Map<String, String> tags = delegate.quotaMetricTags(quotaType, principal, clientId);
        String user = tags.get("user");
        if (quotaType != ClientQuotaType.PRODUCE || user == null || user.isEmpty()
                || !"".equals(tags.get("client-id"))) {
            return tags;
        }
        Map<String, String> tagged = new LinkedHashMap<>(tags);
        tagged.put(EPOCH_TAG, String.valueOf(epochs.computeIfAbsent(user, u -> new Epoch()).number));
        return tagged;
    }

    @Override
    public Double quotaLimit(ClientQuotaType quotaType, Map<String, String> metricTags) {
        if (!metricTags.containsKey(EPOCH_TAG)) {
            return delegate.quotaLimit(quotaType, metricTags);
        }
        Map<String, String> tags = new LinkedHashMap<>(metricTags);
        tags.remove(EPOCH_TAG);
        return delegate.quotaLimit(quotaType, tags);
    }

    @Override
    public void updateQuota(ClientQuotaType quotaType, ClientQuotaEntity entity, double newValue) {
        delegate.updateQuota(quotaType, entity, newValue);
    }

    @Override
    public void removeQuota(ClientQuotaType quotaType, ClientQuotaEntity entity) {
        delegate.removeQuota(quotaType, entity);
    }

    @Override
    public boolean quotaResetRequired(ClientQuotaType quotaType) {
        return delegate.quotaResetRequired(quotaType);
    }

    @Override
    public boolean updateClusterMetadata(Cluster cluster) {
        return delegate.updateClusterMetadata(cluster);
    }

    @Override
    public void close() {
        delegate.close();
    }
}
