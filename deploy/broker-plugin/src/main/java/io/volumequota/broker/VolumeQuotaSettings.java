package io.volumequota.broker;

import static io.volumequota.broker.VolumeQuotaConfig.*;

import java.util.List;
import java.util.Locale;
import java.util.function.DoublePredicate;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigException;

/**
 * The callback's settings as one Kafka {@link ConfigDef}: every key with its type, default,
 * check and documentation. {@link VolumeQuotaConfig#parse} reads the broker properties through
 * it; the settings table of docs/broker-plugin.md is generated from it ({@code SettingsTableTest}).
 * The documentation strings are Markdown.
 */
final class VolumeQuotaSettings {

    /** Not a key of the definition: any Kafka consumer property under this prefix. Documented with them. */
    static final String CONSUMER_PREFIX_DOC = "with `source=topic`, `bootstrap.servers` is required: any Kafka"
            + " consumer property, prefix removed, for the callback's own `KafkaConsumer` (e.g."
            + " `...consumer.bootstrap.servers`, `...security.protocol=SSL`, `...ssl.keystore.type=PEM`,"
            + " `...ssl.keystore.location`, `...ssl.truststore.type=PEM`, `...ssl.truststore.location`,"
            + " `...ssl.endpoint.identification.algorithm=`). `key.deserializer`, `value.deserializer` and"
            + " `enable.auto.commit` are refused (the callback sets them); `group.id` is not needed. Values of"
            + " keys containing `password` are hidden in the log";

    private VolumeQuotaSettings() {
    }

    static ConfigDef definition() {
        ConfigDef definition = new ConfigDef();
        defineSource(definition);
        defineQuotas(definition);
        defineTimes(definition);
        return definition;
    }

    private static void defineSource(ConfigDef definition) {
        definition.define(DECISION_SOURCE, Type.STRING, "file", oneOf("file", "topic"), Importance.HIGH,
                "`file` (the sidecar's decision file) or `topic` (the cluster agent's decisions topic, no sidecar;"
                        + " see [Decision from Kafka](#decision-from-kafka))");
        definition.define(DECISION_PATH, Type.STRING, null, Importance.HIGH,
                "the sidecar's decision file; required with `source=file`");
        definition.define(DECISION_TOPIC, Type.STRING, DEFAULT_DECISION_TOPIC, Importance.MEDIUM,
                "with `source=topic`: the compacted topic whose partition 0 holds the decisions (key `cluster`)");
        definition.define(DECISION_REBUILD_AFTER_MS, Type.LONG, null, wholeAbove(0, true), Importance.LOW,
                "with `source=topic`: after this long without a record, the callback closes its consumer and builds"
                        + " a new one bootstrapped from one broker that did not lead the decisions topic, in turn (see"
                        + " [How the callback reads the topic](#how-the-callback-reads-the-topic)). Not set: half the"
                        + " lifetime (`validUntil - decidedAt`, at most `max.validity.ms`) of the newest decision"
                        + " received, at least 1 s: 15 s with the agent's default 30 s validity, and 15 s before the"
                        + " first decision. Keep it above the agent's rewrite interval (a third of its validity)");
        definition.define(EXCLUDED_PRINCIPALS, Type.STRING, "", excludedPrincipals(), Importance.HIGH,
                "principals that are never throttled. The separator is `;` because TLS distinguished names contain"
                        + " commas. Matched on the principal name, which is what the quota tags carry. Exact form:"
                        + " whitespace around an entry is dropped (`User:a; User:b` works, with a start-up warning);"
                        + " the name is everything after `User:` up to the next `;`, taken verbatim, so `User: alice`"
                        + " names the principal ` alice` (with a space) and is reported at start as a WARN");
        definition.define(ON_MISSING, Type.STRING, "PAUSE", oneOf("PAUSE", "OPEN"),
                Importance.HIGH, "`PAUSE` (fail safe) or `OPEN`, applied when there is no valid decision");
    }

    private static void defineQuotas(ConfigDef definition) {
        definition.define(BASE_BYTES_PER_SECOND, Type.DOUBLE, ConfigDef.NO_DEFAULT_VALUE, number("> 0", x -> x > 0),
                Importance.HIGH, "PRODUCE quota per principal and broker when OPEN");
        definition.define(PAUSE_BYTES_PER_SECOND, Type.DOUBLE, DEFAULT_PAUSE_BYTES_PER_SECOND,
                number("> 0, <= base", x -> x > 0), Importance.HIGH,
                "the floor (256 KiB/s by default): the quota for PAUSE and for any THROTTLE factor that would go"
                        + " below it. Each principal's own floor is at least this (see `pause.throttle.ms`)");
        definition.define(PAUSE_PRINCIPAL_CEILING, Type.DOUBLE, DEFAULT_PAUSE_PRINCIPAL_CEILING,
                number(">= pause.bytes.per.second", x -> x > 0), Importance.MEDIUM,
                "the PAUSE ceiling per principal (2 MiB/s by default): what one paused principal may write to a"
                        + " broker, whatever its number of client ids. See [The PAUSE ceiling](#the-pause-ceiling)");
        definition.define(PAUSE_BROKER_CEILING, Type.DOUBLE, DEFAULT_PAUSE_BROKER_CEILING,
                number(">= pause.bytes.per.second", x -> x > 0), Importance.MEDIUM,
                "the PAUSE ceiling per broker (8 MiB/s by default): what all paused principals together may write"
                        + " to a broker, shared equally among the principals that produced to it in the last 60 s");
        definition.define(ASSUMED_REQUEST_BYTES, Type.DOUBLE, DEFAULT_ASSUMED_REQUEST_BYTES,
                number("> 0", x -> x > 0), Importance.LOW,
                "request size assumed while the broker's byte rates cannot be read, and for principals not"
                        + " measured yet (Kafka's default `max.request.size`)");
        definition.define(MAX_STEP_DOWN_RATIO, Type.DOUBLE, DEFAULT_MAX_STEP_DOWN_RATIO, number("> 1", x -> x > 1),
                Importance.LOW, "fallback rule, used when the broker's byte rates cannot be read: the quota never"
                        + " falls below (highest quota in force during the last quota window) / ratio");
        definition.define(THROTTLE_FACTOR_STEP, Type.DOUBLE, DEFAULT_THROTTLE_FACTOR_STEP,
                number("in (0, 0.5]", x -> x > 0 && x <= 0.5), Importance.LOW,
                "THROTTLE factors are rounded down to multiples of this, with half a step of hysteresis");
    }

    private static void defineTimes(ConfigDef definition) {
        definition.define(STEP_DOWN_THROTTLE_MS, Type.LONG, DEFAULT_STEP_DOWN_THROTTLE_MS, wholeAbove(0, false),
                Importance.LOW, "T_step: while a principal's quota comes down, it stays at or above (bytes in the"
                        + " broker's rate window) / (window + T_step), so those bytes earn a throttle of at most T_step");
        definition.define(PAUSE_THROTTLE_MS, Type.LONG, DEFAULT_PAUSE_THROTTLE_MS, wholeAbove(0, false),
                Importance.LOW, "T_floor: a principal's floor is at least connections x request size / T_floor");
        definition.define(MAX_THROTTLE_MS, Type.LONG, DEFAULT_MAX_THROTTLE_MS, wholeAbove(0, false), Importance.LOW,
                "T_max (>= T_step): the quota rises again whenever the bytes in the window would earn a throttle"
                        + " above T_max, e.g. because producers share a client id and count as one connection");
        definition.define(MAX_VALIDITY_MS, Type.LONG, DEFAULT_MAX_VALIDITY_MS, wholeAbove(0, false),
                Importance.MEDIUM, "a decision is never applied longer than this (5 min by default) after the"
                        + " callback first read it (monotonic clock), whatever its `validUntil`; one whose"
                        + " `decidedAt` is more than this ahead of the broker's clock is refused");
        definition.define(RELOAD_INTERVAL_MS, Type.LONG, DEFAULT_RELOAD_INTERVAL_MS, wholeAbove(0, false),
                Importance.MEDIUM, "period of the reader (file and byte rates) and of the ticker (expiry check and"
                        + " quotas)");
        definition.define(KAFKA_QUOTA_WINDOW_NUM, Type.INT, KAFKA_DEFAULT_QUOTA_WINDOW_NUM, wholeAbove(0, false),
                Importance.LOW, "Kafka's own rate window setting (Kafka's default). The callback reads it so that"
                        + " the step-down limit uses the broker's window length");
        definition.define(KAFKA_QUOTA_WINDOW_SIZE_SECONDS, Type.INT, KAFKA_DEFAULT_QUOTA_WINDOW_SIZE_SECONDS,
                wholeAbove(0, false), Importance.LOW, "Kafka's own rate window setting (Kafka's default), read like"
                        + " `quota.window.num`");
    }

    /** A number (already parsed by its type) that passes {@code check}; infinity and NaN never do. */
    static ConfigDef.Validator number(String description, DoublePredicate check) {
        return validator(description, (key, value) -> {
            double number = ((Number) value).doubleValue();
            if (!Double.isFinite(number) || !check.test(number)) {
                throw new ConfigException(key, value, "must be a number " + description);
            }
        });
    }

    /** A whole number above {@code bound} and at most {@link Integer#MAX_VALUE}; {@code null} if optional. */
    static ConfigDef.Validator wholeAbove(long bound, boolean optional) {
        String description = "whole number > " + bound + (optional ? ", or not set" : "");
        return validator(description, (key, value) -> {
            if (value == null && optional) {
                return;
            }
            long number = ((Number) value).longValue();
            if (number <= bound || number > Integer.MAX_VALUE) {
                throw new ConfigException(key, value, "must be a " + description);
            }
        });
    }

    /** One of {@code choices}, in any case. */
    static ConfigDef.Validator oneOf(String... choices) {
        List<String> allowed = List.of(choices);
        String description = "`" + String.join("` or `", allowed) + "` (any case)";
        return validator(description, (key, value) -> {
            String text = (String) value;
            if (allowed.stream().noneMatch(choice -> choice.equalsIgnoreCase(text.toLowerCase(Locale.ROOT)))) {
                throw new ConfigException(key, value, "must be " + String.join(" or ", allowed));
            }
        });
    }

    /** {@code ;}-separated {@code User:<name>} entries, checked by the parser itself. */
    static ConfigDef.Validator excludedPrincipals() {
        return validator("`;`-separated `User:<name>` entries", (key, value) ->
                VolumeQuotaConfig.excludedUserNames((String) value, new java.util.ArrayList<>()));
    }

    private static ConfigDef.Validator validator(String description, ConfigDef.Validator check) {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                check.ensureValid(name, value);
            }

            @Override
            public String toString() {
                return description;
            }
        };
    }
}
