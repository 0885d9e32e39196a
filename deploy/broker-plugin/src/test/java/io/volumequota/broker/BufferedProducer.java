package io.volumequota.broker;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * One producer connection with a buffer, as the epoch simulation models it: the application
 * appends at a constant rate into {@code buffer.memory} (send() blocks while it is full), and the
 * client forms requests of at least one record ({@code smallest}) up to a full batch
 * ({@code largest}) from what is queued.
 *
 * <ul>
 *   <li>Java-like ({@code pipelined = 0}): the client holds back while muted (KIP-219) and forms
 *       its next request when the throttle is over, from everything queued by then;</li>
 *   <li>librdkafka-like ({@code pipelined = K}): the client does not hold back; it keeps up to K
 *       requests written to the connection, each formed as soon as a slot is free and a record is
 *       queued, and the broker reads the oldest one each time the connection is unmuted. Those
 *       requests were formed before the mute ended, so they are smaller than Java's.</li>
 * </ul>
 */
final class BufferedProducer {

    /** A request formed and not yet read by the broker. */
    private record Request(double formedAtMs, double bytes, double oldestRecordCreatedAtMs) {
    }

    private final double rate; // bytes per ms the application produces
    private final double capacity;
    private final double smallest;
    private final double largest;
    private final int pipelined;
    private double created;
    private double formed;
    private double lastMs;
    private double blockedSinceMs = Double.NaN;
    private long maxBlockedMs;
    private final List<double[]> points = new ArrayList<>(); // {timeMs, createdBytes}, both increasing
    private final ArrayDeque<Request> written = new ArrayDeque<>();
    private final ArrayDeque<Double> freeSlotsSinceMs = new ArrayDeque<>();
    double mutedUntilMs;
    double lastReadMs;

    BufferedProducer(double bytesPerSecond, double capacity, double smallest, double largest, int pipelined,
                     double startMs) {
        this.rate = bytesPerSecond / 1000.0;
        this.capacity = capacity;
        this.smallest = smallest;
        this.largest = largest;
        this.pipelined = pipelined;
        this.lastMs = startMs;
        this.lastReadMs = startMs;
        points.add(new double[] {startMs, 0});
        for (int i = 0; i < pipelined; i++) {
            freeSlotsSinceMs.add(startMs);
        }
    }

    /** When the broker can read this connection's next request. */
    double readyAtMs() {
        if (pipelined == 0) {
            return Math.max(mutedUntilMs, timeWhenQueued(smallest));
        }
        Request head = written.peekFirst();
        return Math.max(mutedUntilMs, head != null ? head.formedAtMs() : nextFormationMs());
    }

    /** The broker reads the next request at {@code nowMs}: returns {bytes, age of its oldest record in ms}. */
    double[] read(double nowMs) {
        Request request;
        if (pipelined == 0) {
            advance(nowMs);
            request = form(nowMs);
        } else {
            formUntil(nowMs);
            request = written.removeFirst();
            freeSlotsSinceMs.addLast(nowMs);
        }
        lastReadMs = nowMs;
        return new double[] {request.bytes(), nowMs - request.oldestRecordCreatedAtMs()};
    }

    /** The longest blocked send() so far, up to {@code nowMs}. */
    long maxBlockedMs(double nowMs) {
        advance(Math.max(nowMs, lastMs));
        return Double.isNaN(blockedSinceMs) ? maxBlockedMs : Math.max(maxBlockedMs, (long) (nowMs - blockedSinceMs));
    }

    /** Age at {@code nowMs} of the oldest record not yet in a request (0 if none). */
    double oldestUnsentAgeMs(double nowMs) {
        advance(Math.max(nowMs, lastMs));
        return created - formed < 1 ? 0 : nowMs - createdAt(formed);
    }

    private double nextFormationMs() {
        return Math.max(freeSlotsSinceMs.peekFirst(), Math.max(lastMs, timeWhenQueued(smallest)));
    }

    /** Forms the pipelined requests whose slot and first record were there by {@code nowMs}. */
    private void formUntil(double nowMs) {
        while (!freeSlotsSinceMs.isEmpty()) {
            double at = nextFormationMs();
            if (at > nowMs) {
                return;
            }
            advance(at);
            freeSlotsSinceMs.removeFirst();
            written.addLast(form(at));
        }
    }

    private Request form(double atMs) {
        double bytes = Math.min(largest, Math.floor(created - formed));
        Request request = new Request(atMs, bytes, createdAt(formed));
        formed += bytes;
        if (!Double.isNaN(blockedSinceMs)) {
            maxBlockedMs = Math.max(maxBlockedMs, (long) (atMs - blockedSinceMs));
            blockedSinceMs = Double.NaN;
        }
        return request;
    }

    /** The application appends at its rate until the buffer is full; send() blocks then. */
    private void advance(double nowMs) {
        if (nowMs < lastMs) {
            return;
        }
        if (Double.isNaN(blockedSinceMs)) {
            double room = formed + capacity - created;
            double wanted = rate * (nowMs - lastMs);
            if (wanted >= room) {
                double fullAt = lastMs + room / rate;
                created = formed + capacity;
                points.add(new double[] {fullAt, created});
                blockedSinceMs = fullAt;
            } else {
                created += wanted;
            }
        }
        points.add(new double[] {nowMs, created});
        lastMs = nowMs;
    }

    /** Time at which {@code bytes} are queued, if the application keeps producing. */
    private double timeWhenQueued(double bytes) {
        double missing = bytes - (created - formed);
        return missing <= 0 ? lastMs : lastMs + missing / rate;
    }

    /** When byte number {@code index} was created (piecewise linear between the points). */
    private double createdAt(double index) {
        int lo = 0;
        int hi = points.size() - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (points.get(mid)[1] >= index) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        double[] p = points.get(lo);
        if (lo == 0 || p[1] == index) {
            return p[0];
        }
        double[] q = points.get(lo - 1);
        return q[0] + (p[0] - q[0]) * (index - q[1]) / (p[1] - q[1]);
    }
}
