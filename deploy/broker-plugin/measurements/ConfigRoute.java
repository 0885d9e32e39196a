import java.io.FileReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.common.config.ConfigResource;

/**
 * The dynamic-broker-config route, measured with Kafka's own Java Admin (librdkafka refuses the
 * cluster-default broker resource ""). Run by decision_routes.py with the broker's libs/ on the
 * class path: java -cp 'libs/*' ConfigRoute.java <admin.properties> <mode> [args]
 *
 * modes: propagation <rounds> | growth <alters> <spacingMs> <metadataDir> | probe <durationMs>
 * Prints one JSON object.
 */
public final class ConfigRoute {

    static final String KEY = "volume.quota.decision.json";
    static final ConfigResource DEFAULT = new ConfigResource(ConfigResource.Type.BROKER, "");

    public static void main(String[] args) throws Exception {
        Properties properties = new Properties();
        try (FileReader reader = new FileReader(args[0])) {
            properties.load(reader);
        }
        properties.put("request.timeout.ms", "2000");
        properties.put("default.api.timeout.ms", "3000");
        try (Admin admin = Admin.create(properties)) {
            // The first call finds the cluster (slow on a loaded machine); not part of any figure.
            admin.describeCluster().nodes().get(60, TimeUnit.SECONDS);
            switch (args[1]) {
                case "propagation" -> propagation(admin, Integer.parseInt(args[2]));
                case "growth" -> growth(admin, Integer.parseInt(args[2]), Long.parseLong(args[3]), Path.of(args[4]));
                case "probe" -> probe(admin, Long.parseLong(args[2]));
                default -> throw new IllegalArgumentException(args[1]);
            }
        }
    }

    static String decision(int counter) {
        return "{\"schemaVersion\":1,\"state\":\"THROTTLE\",\"throttleFactor\":0.5,\"counter\":" + counter
                + ",\"validUntil\":\"2026-11-23T08:00:30Z\",\"reasons\":[{\"detail\":\"" + "x".repeat(300) + "\"}]}";
    }

    /**
     * A broker's DescribeConfigs lists only the configs Kafka defines, not a plugin's own key, so
     * each round also sets a harmless cluster-wide dynamic key Kafka defines (same alter, same
     * metadata batch, same DynamicConfigPublisher step that calls the Reconfigurables) and
     * watches that one on every broker.
     */
    static final String CARRIER = "log.cleaner.backoff.ms";

    static void alter(Admin admin, String value) throws Exception {
        alter(admin, value, null);
    }

    static void alter(Admin admin, String value, String carrier) throws Exception {
        List<AlterConfigOp> ops = new java.util.ArrayList<>();
        ops.add(new AlterConfigOp(new ConfigEntry(KEY, value), AlterConfigOp.OpType.SET));
        if (carrier != null) {
            ops.add(new AlterConfigOp(new ConfigEntry(CARRIER, carrier), AlterConfigOp.OpType.SET));
        }
        admin.incrementalAlterConfigs(Map.of(DEFAULT, ops), new AlterConfigsOptions().timeoutMs(3000))
                .all().get(4, TimeUnit.SECONDS);
    }

    static String describe(Admin admin, String broker, String key) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.BROKER, broker);
        Config config = admin.describeConfigs(List.of(resource), new DescribeConfigsOptions().timeoutMs(3000))
                .all().get(4, TimeUnit.SECONDS).get(resource);
        ConfigEntry entry = config.get(key);
        return entry == null ? null : entry.value();
    }

    static boolean seen(Admin admin, String broker, String carrier) throws Exception {
        return carrier.equals(describe(admin, broker, CARRIER));
    }

    static void propagation(Admin admin, int rounds) throws Exception {
        StringBuilder acks = new StringBuilder();
        StringBuilder everywhere = new StringBuilder();
        for (int round = 0; round < rounds; round++) {
            String value = decision(round);
            String carrier = String.valueOf(15_000 + round);
            long start = System.nanoTime();
            alter(admin, value, carrier);
            long acked = System.nanoTime();
            java.util.Set<String> pending = new java.util.HashSet<>(List.of("0", "1", "2"));
            while (!pending.isEmpty()) {
                for (String broker : List.copyOf(pending)) {
                    if (seen(admin, broker, carrier)) {
                        pending.remove(broker);
                    }
                }
                if (System.nanoTime() - start > 30_000_000_000L) {
                    throw new IllegalStateException("brokers " + pending + " never saw round " + round);
                }
            }
            long all = System.nanoTime();
            acks.append(acks.isEmpty() ? "" : ",").append((acked - start) / 1e6);
            everywhere.append(everywhere.isEmpty() ? "" : ",").append((all - start) / 1e6);
            Thread.sleep(200);
        }
        String stored = describe(admin, "", KEY);
        System.out.println("{\"ack_ms\":[" + acks + "],\"everywhere_ms\":[" + everywhere
                + "],\"default_resource_has_key\":" + (stored != null && stored.contains("\"counter\"")) + "}");
    }

    static long size(Path directory) throws Exception {
        try (var files = Files.list(directory)) {
            return files.filter(path -> path.toString().endsWith(".log")).mapToLong(path -> path.toFile().length())
                    .sum();
        }
    }

    static void growth(Admin admin, int alters, long spacingMs, Path directory) throws Exception {
        long period = alters * spacingMs;
        long before = size(directory);
        Thread.sleep(period);
        long idle = size(directory) - before;
        before = size(directory);
        long start = System.nanoTime();
        for (int counter = 0; counter < alters; counter++) {
            alter(admin, decision(5000 + counter));
            long next = start + (counter + 1) * spacingMs * 1_000_000L;
            Thread.sleep(Math.max(0, (next - System.nanoTime()) / 1_000_000));
        }
        long busy = size(directory) - before;
        System.out.println("{\"idle_bytes\":" + idle + ",\"busy_bytes\":" + busy + ",\"period_ms\":" + period
                + ",\"alters\":" + alters + "}");
    }

    /** An alter every 200 ms for durationMs: [[epochMs, ok], ...] (ok = 1 when acknowledged). */
    static void probe(Admin admin, long durationMs) throws Exception {
        long end = System.currentTimeMillis() + durationMs;
        StringBuilder attempts = new StringBuilder();
        int counter = 9000;
        while (System.currentTimeMillis() < end) {
            long at = System.currentTimeMillis();
            int ok;
            try {
                alter(admin, decision(counter++));
                ok = 1;
            } catch (Exception e) {
                ok = 0;
            }
            attempts.append(attempts.isEmpty() ? "" : ",").append("[").append(at).append(",").append(ok).append("]");
            Thread.sleep(Math.max(0, at + 200 - System.currentTimeMillis()));
        }
        System.out.println("{\"attempts\":[" + attempts + "]}");
    }
}
