package io.volumequota.broker;

import java.lang.management.ManagementFactory;
import java.util.HashMap;
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
