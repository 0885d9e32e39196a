package io.volumequota.broker;

import java.lang.management.ManagementFactory;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.apache.kafka.common.utils.Sanitizer;

/**
 * Reads the broker's per-principal PRODUCE byte rate from the quota sensors' MBeans in the same
 * JVM: {@code kafka.server:type=Produce,user=<sanitised name>} (the client-id tag is empty, so Kafka's
 * JmxReporter leaves it out), attribute {@code byte-rate}. That is the Rate the broker
 * throttles on (bytes in the retained samples / window).
 */
final class JmxObservedRates implements ObservedRates {

    /** The broker setting that lists its metrics reporters; Kafka's default lists JmxReporter. */
    static final String METRIC_REPORTERS = "metric.reporters";
    static final String JMX_REPORTER = "org.apache.kafka.common.metrics.JmxReporter";

    /**
     * The broker's byte rates over JMX, or, when the broker's {@code metric.reporters} leaves
     * out {@link #JMX_REPORTER} (so no quota sensor is ever an MBean), a source that is never
     * available: the callback then says {@code observed-rate-available 0} and uses its fallback
     * rule, instead of reading "no principal produced" from an empty MBean server.
     */
    static ObservedRates forBroker(Map<String, ?> brokerConfigs) {
        return jmxReporterListed(brokerConfigs) ? new JmxObservedRates() : () -> {
            throw new IllegalStateException(METRIC_REPORTERS + " has no " + JMX_REPORTER
                    + ": the broker's byte rates are not readable");
        };
    }

    /** Whether the broker registers its metrics as MBeans (Kafka's default when the key is unset). */
    static boolean jmxReporterListed(Map<String, ?> brokerConfigs) {
        Object value = brokerConfigs.get(METRIC_REPORTERS);
        if (value == null) {
            return true;
        }
        Collection<?> names = value instanceof Collection<?> list ? list : List.of(value.toString().split(","));
        return names.stream().anyMatch(name -> JMX_REPORTER.equals(String.valueOf(name).trim()));
    }

    private final MBeanServer server;
    private final ObjectName pattern;

    JmxObservedRates() {
        this(ManagementFactory.getPlatformMBeanServer());
    }

    JmxObservedRates(MBeanServer server) {
        this.server = server;
        try {
            this.pattern = new ObjectName("kafka.server:type=Produce,*");
        } catch (javax.management.MalformedObjectNameException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public Map<String, Double> produceByteRates() throws Exception {
        Set<ObjectName> names = server.queryNames(pattern, null);
        Map<String, Double> rates = new HashMap<>();
        for (ObjectName name : names) {
            String user = name.getKeyProperty("user");
            String clientId = name.getKeyProperty("client-id");
            if (user == null || (clientId != null && !clientId.isEmpty())) {
                continue;
            }
            if (user.startsWith("\"")) {
                user = ObjectName.unquote(user);
            }
            Object value = server.getAttribute(name, "byte-rate");
            if (value instanceof Number number) {
                rates.put(Sanitizer.desanitize(user), number.doubleValue()); // the tag is Kafka's sanitised name
            }
        }
        return rates;
    }
}
