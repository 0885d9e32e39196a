package io.volumequota.broker;

import java.util.Map;

/**
 * The broker's own measured PRODUCE byte rate per principal (the Rate of each quota sensor).
 * Read on the poller thread only, never on a request thread.
 */
interface ObservedRates {

    /**
     * Bytes per second per principal name, as the broker's quota sensors measure them now.
     *
     * @throws Exception when the source cannot be read (the caller falls back to a rule that
     *                   does not need it)
     */
    Map<String, Double> produceByteRates() throws Exception;

    /** A source that is never available: the callback then uses its fallback rule. */
    ObservedRates NONE = () -> {
        throw new UnsupportedOperationException("no observed-rate source");
    };
}
