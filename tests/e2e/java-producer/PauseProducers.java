import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * N Java producers of one principal (one KafkaProducer, hence one connection and one client.id,
 * each), producing together {@code rate} bytes/s of {@code recordBytes} records to one topic.
 *
 * <p>Compiled and run by tests/e2e/pause_bound.py. Args: client properties file, topic, N,
 * client-id prefix, rate (bytes/s, all producers together), record bytes, stop file, and
 * optionally "shared-client-id" (every producer uses the prefix itself as client.id). Every
 * second it prints one JSON line per producer with what was acknowledged in that second (bytes,
 * records, failures, the first and last ack instant in epoch ms, the longest send-to-ack
 * latency, the longest blocked send(), and the producer's produce-throttle-time-max: the longest
 * throttle_time_ms the broker returned within the client's metric window, 30 to 60 s). Once the
 * stop file exists, every producer stops sending
 * and is closed (close() waits for every record sent: acked or failed after delivery.timeout.ms),
 * and a last line per producer follows with {"final": true}.
 */
public final class PauseProducers {
    private static final class Window {
        long bytes, acks, failed, sent, firstAck = -1, lastAck = -1, maxLatency, maxBlocked;
        String error = "";

        synchronized void acked(long now, long latency, int size, Exception e) {
            if (e != null) {
                failed++;
                error = e.getClass().getSimpleName() + ": " + e.getMessage();
                return;
            }
            bytes += size;
            acks++;
            if (firstAck < 0) firstAck = now;
            lastAck = now;
            maxLatency = Math.max(maxLatency, latency);
        }

        synchronized void sent(long blocked) {
            sent++;
            maxBlocked = Math.max(maxBlocked, blocked);
        }

        synchronized String drain(int producer, long now, boolean last, long throttleMaxMs) {
            String line = String.format(
                "{\"p\":%d,\"t\":%d,\"bytes\":%d,\"acks\":%d,\"failed\":%d,\"sent\":%d,"
                    + "\"firstAck\":%d,\"lastAck\":%d,\"maxLatencyMs\":%d,\"maxBlockedMs\":%d,"
                    + "\"throttleMaxMs\":%d,\"final\":%b,\"error\":\"%s\"}",
                producer, now, bytes, acks, failed, sent, firstAck, lastAck, maxLatency, maxBlocked,
                throttleMaxMs, last, error.replace("\\", "/").replace("\"", "'"));
            bytes = acks = failed = sent = maxLatency = maxBlocked = 0;
            firstAck = lastAck = -1;
            error = "";
            return line;
        }
    }

    public static void main(String[] args) throws Exception {
        Properties base = new Properties();
        try (InputStream in = Files.newInputStream(Path.of(args[0]))) {
            base.load(in);
        }
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        String prefix = args[3];
        double rate = Double.parseDouble(args[4]);
        int recordBytes = Integer.parseInt(args[5]);
        Path stop = Path.of(args[6]);
        boolean sharedClientId = args.length > 7 && args[7].equals("shared-client-id");
        long intervalNanos = (long) (1e9 * recordBytes * count / rate);

        List<KafkaProducer<byte[], byte[]>> producers = new ArrayList<>();
        List<Window> windows = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Properties props = new Properties();
            props.putAll(base);
            props.put("client.id", sharedClientId ? prefix : prefix + "-" + i);
            producers.add(new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer()));
            windows.add(new Window());
        }
        for (int i = 0; i < count; i++) {
            KafkaProducer<byte[], byte[]> producer = producers.get(i);
            Window window = windows.get(i);
            long offset = intervalNanos * i / count;
            Thread thread = new Thread(() -> send(producer, window, topic, recordBytes, intervalNanos, offset, stop));
            thread.setName("send-" + i);
            thread.start();
            threads.add(thread);
        }
        Thread reporter = new Thread(() -> report(producers, windows, stop));
        reporter.setDaemon(true);
        reporter.start();
        for (Thread thread : threads) thread.join();
        List<Thread> closers = new ArrayList<>();
        for (KafkaProducer<byte[], byte[]> producer : producers) {
            Thread closer = new Thread(producer::close);
            closer.start();
            closers.add(closer);
        }
        for (Thread closer : closers) closer.join();
        synchronized (System.out) {
            for (int i = 0; i < count; i++) {
                System.out.println(windows.get(i).drain(i, System.currentTimeMillis(), true,
                        throttleMaxMs(producers.get(i))));
            }
            System.out.flush();
        }
    }

    private static void send(KafkaProducer<byte[], byte[]> producer, Window window, String topic,
                             int recordBytes, long intervalNanos, long offset, Path stop) {
        byte[] payload = new byte[recordBytes];
        long next = System.nanoTime() + offset;
        while (!Files.exists(stop)) {
            long now = System.nanoTime();
            if (next > now) {
                sleepNanos(next - now);
                continue;
            }
            // An application that was blocked does not catch up more than a second.
            next = Math.max(next + intervalNanos, now - 1_000_000_000L);
            long sentAt = System.currentTimeMillis();
            try {
                producer.send(new ProducerRecord<>(topic, payload), (metadata, e) -> {
                    long ackAt = System.currentTimeMillis();
                    window.acked(ackAt, ackAt - sentAt, recordBytes, e);
                });
            } catch (RuntimeException e) {
                window.acked(System.currentTimeMillis(), 0, recordBytes, e);
            }
            window.sent(System.currentTimeMillis() - sentAt);
        }
    }

    /** produce-throttle-time-max of the producer's metrics, 0 while it has no sample. */
    private static long throttleMaxMs(KafkaProducer<byte[], byte[]> producer) {
        for (Map.Entry<MetricName, ? extends Metric> entry : producer.metrics().entrySet()) {
            MetricName name = entry.getKey();
            if (name.name().equals("produce-throttle-time-max") && name.group().equals("producer-metrics")) {
                Object value = entry.getValue().metricValue();
                if (value instanceof Double max && Double.isFinite(max)) {
                    return Math.round(max);
                }
            }
        }
        return 0;
    }

    private static void report(List<KafkaProducer<byte[], byte[]>> producers, List<Window> windows, Path stop) {
        long next = System.currentTimeMillis() + 1000;
        while (true) {
            sleepNanos(Math.max(0, next - System.currentTimeMillis()) * 1_000_000L);
            next += 1000;
            synchronized (System.out) {
                long now = System.currentTimeMillis();
                for (int i = 0; i < windows.size(); i++) {
                    System.out.println(windows.get(i).drain(i, now, false, throttleMaxMs(producers.get(i))));
                }
                System.out.flush();
            }
        }
    }

    private static void sleepNanos(long nanos) {
        try {
            Thread.sleep(nanos / 1_000_000L, (int) (nanos % 1_000_000L));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
