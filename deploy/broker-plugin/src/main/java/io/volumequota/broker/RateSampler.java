package io.volumequota.broker;

import java.util.Map;
import java.util.function.LongSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's reader-thread half for the broker's measured PRODUCE byte rates per principal
 * (JMX, {@link ObservedRates}): samples them after each read, says once when they cannot be read
 * (and once when they can again), and hands the ticker only a sample that is still fresh.
 */
final class RateSampler {

    private static final Logger LOG = LoggerFactory.getLogger(QuotaEngine.class);

    private record RateSample(Map<String, Double> rates, long atMonoMs) {
    }

    private final VolumeQuotaConfig config;
    private final LongSupplier monoMs;
    private final ObservedRates observedRates;
    private final int engineId;
    /** A sample older than this is not used (the reader hangs or lags). */
    private final long staleRatesMs;
    private volatile RateSample rateSample;
    /** What was logged last: null nothing, TRUE readable, FALSE not readable. Reader thread only. */
    private Boolean ratesLogged;

    RateSampler(VolumeQuotaConfig config, LongSupplier monoMs, ObservedRates observedRates, int engineId) {
        this.config = config;
        this.monoMs = monoMs;
        this.observedRates = observedRates;
        this.engineId = engineId;
        this.staleRatesMs = Math.max(2_000, 4 * config.reloadIntervalMs());
    }

    /** Reads the broker's byte rates; a failure leaves a sample without rates. */
    void sample() {
        Map<String, Double> rates;
        try {
            rates = observedRates.produceByteRates();
        } catch (Exception | LinkageError e) {
            rates = null;
            if (!Boolean.FALSE.equals(ratesLogged)) {
                ratesLogged = Boolean.FALSE;
                LOG.warn("volume-quota engine #{}: cannot read the broker's produce byte rates ({}); stepping down"
                        + " by at most x1/{} per {} ms and assuming {}-byte requests until they can be read",
                        engineId, e.toString(), config.maxStepDownRatio(), config.stepDownIntervalMs(),
                        (long) config.assumedRequestBytes());
            }
        }
        if (rates != null && !Boolean.TRUE.equals(ratesLogged)) {
            ratesLogged = Boolean.TRUE;
            LOG.info("volume-quota engine #{}: reading the broker's produce byte rates", engineId);
        }
        rateSample = new RateSample(rates, monoMs.getAsLong());
    }

    /** The rates of the newest sample if it has rates and is not stale at {@code nowMs}; else null. */
    Map<String, Double> fresh(long nowMs) {
        RateSample sample = rateSample;
        return sample != null && sample.rates() != null && nowMs - sample.atMonoMs() <= staleRatesMs
                ? sample.rates() : null;
    }
}
