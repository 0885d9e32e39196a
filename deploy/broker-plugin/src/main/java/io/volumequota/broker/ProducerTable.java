package io.volumequota.broker;

import java.util.Collection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * The producing principals as the broker sees them: request threads count their PRODUCE
 * requests and client ids ({@link #onProduceRequest}) and read their quotas ({@link #quotaFor});
 * the ticker turns the counts and the broker's byte rates into what the policy needs
 * ({@link Principal#observe}).
 */
final class ProducerTable {

    /** A client id counts as a connection while it sent a produce request within this time. */
    static final long CONNECTION_LOOKBACK_MS = 60_000;
    /** Time constant of the average request size (bytes / requests, both faded). */
    static final long REQUEST_SIZE_AVERAGE_MS = 30_000;
    /** Principals without a produce request for this long are forgotten (Kafka drops their sensors after 1 h). */
    static final long IDLE_PRINCIPAL_MS = 3_600_000;

    /** One producing principal as the broker sees it. */
    static final class Principal {
        final String name;
        final LongAdder requests = new LongAdder();
        final ConcurrentHashMap<String, Long> clients = new ConcurrentHashMap<>();
        volatile long lastRequestMs;
        volatile double quota = Double.NaN;
        // Ticker only.
        long lastTickMs = Long.MIN_VALUE;
        long lastCount;
        double bytesSum;
        double requestsSum;
        double demandAtFall; // its byte rate when the target last fell
        StepDownLimiter limiter;
        int connections;

        Principal(String name) {
            this.name = name;
        }

        /**
         * Updates its connections and request-size average from this tick's counts and byte rate
         * ({@code null}: not measured) and returns the request size to plan its floor for.
         */
        double observe(Double rate, boolean ratesKnown, long now, long targetFellAtMs, VolumeQuotaConfig config) {
            long count = requests.sum();
            clients.values().removeIf(seen -> now - seen > CONNECTION_LOOKBACK_MS);
            connections = Math.max(1, clients.size());
            if (lastTickMs != Long.MIN_VALUE && now > lastTickMs && rate != null) {
                // Average request size = bytes / requests, both summed with exponentially fading
                // weights (time constant REQUEST_SIZE_AVERAGE_MS) over the polls.
                double fade = Math.exp(-(now - lastTickMs) / (double) REQUEST_SIZE_AVERAGE_MS);
                bytesSum = bytesSum * fade + rate * (now - lastTickMs) / 1000.0;
                requestsSum = requestsSum * fade + (count - lastCount);
            }
            lastTickMs = now;
            lastCount = count;
            if (targetFellAtMs == now) {
                demandAtFall = rate == null ? 0.0 : rate;
            }
            double requestBytes = config.assumedRequestBytes();
            if (ratesKnown && requestsSum >= 1 && bytesSum > 0) {
                requestBytes = bytesSum / requestsSum;
                if (now - targetFellAtMs < REQUEST_SIZE_AVERAGE_MS) {
                    // Until the average has seen the requests that grew during the first mute.
                    requestBytes = PrincipalQuota.plannedRequestBytes(requestBytes, demandAtFall, connections,
                            config.assumedRequestBytes(), config.stepDownThrottleMs());
                }
            }
            return requestBytes;
        }
    }

    private final ConcurrentHashMap<String, Principal> principals = new ConcurrentHashMap<>();
    private final LongSupplier monoMs;

    ProducerTable(LongSupplier monoMs) {
        this.monoMs = monoMs;
    }

    /** Counts one PRODUCE request of {@code user} from {@code clientId}. Cheap; never throws. */
    void onProduceRequest(String user, String clientId) {
        Principal principal = principals.get(user);
        if (principal == null) {
            principal = principals.computeIfAbsent(user, Principal::new);
        }
        long now = monoMs.getAsLong();
        principal.requests.increment();
        principal.lastRequestMs = now;
        String client = clientId == null ? "" : clientId;
        Long seen = principal.clients.get(client);
        if (seen == null || now - seen >= 1_000) {
            principal.clients.put(client, now);
        }
    }

    /** The PRODUCE quota for {@code user}: its own, or {@code defaultQuota} without one. */
    double quotaFor(String user, double defaultQuota) {
        Principal principal = principals.get(user);
        double quota = principal == null ? Double.NaN : principal.quota;
        return Double.isNaN(quota) ? defaultQuota : quota;
    }

    /** The produce requests counted for {@code user} since it was first seen (tests). */
    long countedRequests(String user) {
        Principal principal = principals.get(user);
        return principal == null ? 0 : principal.requests.sum();
    }

    /** Principals that sent a PRODUCE request within {@link #CONNECTION_LOOKBACK_MS} of {@code now}. */
    int active(long now) {
        int active = 0;
        for (Principal principal : principals.values()) {
            if (now - principal.lastRequestMs <= CONNECTION_LOOKBACK_MS) {
                active++;
            }
        }
        return active;
    }

    Collection<Principal> all() {
        return principals.values();
    }

    /** Forgets {@code principal} if it sent nothing for {@link #IDLE_PRINCIPAL_MS}; returns whether it did. */
    boolean forgetIfIdle(Principal principal, long now) {
        if (now - principal.lastRequestMs > IDLE_PRINCIPAL_MS) {
            principals.remove(principal.name, principal);
            return true;
        }
        return false;
    }

    boolean isEmpty() {
        return principals.isEmpty();
    }

    int size() {
        return principals.size();
    }

    /** For the rates' lookup by name. */
    static Double rateOf(Map<String, Double> rates, Principal principal) {
        return rates == null ? null : rates.get(principal.name);
    }
}
