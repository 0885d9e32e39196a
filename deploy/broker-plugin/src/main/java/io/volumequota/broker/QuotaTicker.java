package io.volumequota.broker;

import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One tick of the engine, on the ticker thread: the validity of the decision held, the factor in
 * force, every principal's quota and the default one, what the metrics show, and the reset flags.
 * No I/O. Called under the engine's tick lock only.
 */
final class QuotaTicker {

    private static final Logger LOG = LoggerFactory.getLogger(QuotaEngine.class);

    /** The quota changes of one tick. */
    private static final class Changes {
        int changed;
        int down;
        double highest = Double.NaN;

        void count(double previous, double next) {
            if (Double.compare(next, previous) != 0) {
                changed++;
                if (!Double.isNaN(previous) && next < previous) {
                    down++;
                }
            }
        }
    }

    private final VolumeQuotaConfig config;
    private final int id;
    private final Clock wall;
    private final LongSupplier monoMs;
    private final DecisionReader reader;
    private final RateSampler rates;
    private final ValidityClock validity;
    private final ProducerTable producers;
    private final EngineMetrics metrics;
    private final List<AtomicBoolean> resetFlags;
    private final StepDownLimiter defaultLimiter;
    private final FactorQuantizer quantizer;
    /** Read on request threads. */
    private volatile double defaultQuota = Double.NaN;
    private String lastStatus;
    private boolean reRaise;
    private long targetFellAtMs = Long.MIN_VALUE / 2;

    QuotaTicker(VolumeQuotaConfig config, int id, Clock wall, LongSupplier monoMs, DecisionReader reader,
                RateSampler rates, ValidityClock validity, ProducerTable producers, EngineMetrics metrics,
                List<AtomicBoolean> resetFlags) {
        this.config = config;
        this.id = id;
        this.wall = wall;
        this.monoMs = monoMs;
        this.reader = reader;
        this.rates = rates;
        this.validity = validity;
        this.producers = producers;
        this.metrics = metrics;
        this.resetFlags = resetFlags;
        this.defaultLimiter = new StepDownLimiter(config.maxStepDownRatio(), config.stepDownIntervalMs());
        this.quantizer = new FactorQuantizer(config.throttleFactorStep());
    }

    /** The quota of a principal without state of its own. */
    double defaultQuota() {
        return defaultQuota;
    }

    void tick() {
        long now = monoMs.getAsLong();
        ValidityClock.Verdict verdict = validity.check(reader.loaded(), now, wall.instant());
        Decision valid = verdict.valid();
        Decision applied = valid;
        if (valid != null && valid.state() == Decision.State.THROTTLE) {
            applied = valid.withFactor(quantizer.apply(valid.throttleFactor()));
        } else {
            quantizer.reset();
        }
        double base = config.baseBytesPerSecond();
        double target = QuotaMapping.targetBytesPerSecond(applied, config);
        if (target < metrics.targetQuota) { // false while NaN
            targetFellAtMs = now;
        }
        metrics.publishDecision(applied, target);
        Map<String, Double> fresh = rates.fresh(now);
        metrics.ratesAvailable = fresh != null;

        // Under PAUSE the ceilings are shared among the principals that produced in the last 60 s.
        boolean paused = target < base && target <= config.pauseBytesPerSecond();
        int pausedPrincipals = paused ? producers.active(now) : 0;
        boolean ceilingInForce = paused && now - targetFellAtMs >= QuotaEngine.CEILING_AFTER_MS;
        Changes changes = new Changes();
        tickPrincipals(target, fresh, now, ceilingInForce, pausedPrincipals, changes);
        double nextDefault = tickDefault(target, now, ceilingInForce, pausedPrincipals, changes);
        metrics.highestQuota = Double.isNaN(changes.highest) ? nextDefault : Math.max(changes.highest, nextDefault);
        logStatus(valid, verdict.problem(), target);
        publishChanges(changes, target, nextDefault);
    }

    /** Every principal's quota at this tick; forgets idle ones. */
    private void tickPrincipals(double target, Map<String, Double> fresh, long now, boolean ceilingInForce,
                                int pausedPrincipals, Changes changes) {
        for (ProducerTable.Principal principal : producers.all()) {
            if (producers.forgetIfIdle(principal, now)) {
                continue;
            }
            // What its sensor has: its own quota, or the default it was created with.
            double previous = Double.isNaN(principal.quota) ? defaultQuota : principal.quota;
            double next = principalQuota(principal, target, fresh, now, ceilingInForce, pausedPrincipals);
            principal.quota = next;
            changes.count(previous, next);
            if (Double.compare(next, previous) != 0) {
                LOG.debug("volume-quota engine #{}: PRODUCE quota of {} {} -> {} B/s ({} connection(s))", id,
                        principal.name, previous, next, principal.connections);
            }
            changes.highest = Double.isNaN(changes.highest) ? next : Math.max(changes.highest, next);
        }
    }

    /**
     * One principal's quota at this tick: measures it, asks {@link ProducePolicy}, keeps the step-down history.
     *
     * @param ceilingInForce the PAUSE ceiling caps the quota (false in OPEN and THROTTLE, and in the
     *                       first CEILING_AFTER_MS of a PAUSE, when it caps only the goal and the rise)
     * @param pausedPrincipals principals that share the broker's PAUSE ceiling (0 unless PAUSE)
     */
    private double principalQuota(ProducerTable.Principal principal, double target, Map<String, Double> fresh,
                                  long now, boolean ceilingInForce, int pausedPrincipals) {
        double base = config.baseBytesPerSecond();
        long windowMs = config.stepDownIntervalMs();
        Double rate = ProducerTable.rateOf(fresh, principal);
        double bytesInWindow = rate == null ? Double.NaN : rate * windowMs / 1000.0;
        double requestBytes = principal.observe(rate, fresh != null, now, targetFellAtMs, config);
        double floor = PrincipalQuota.floor(base, config.pauseBytesPerSecond(), principal.connections, requestBytes,
                config.pauseThrottleMs());
        double cap = pausedPrincipals == 0 ? base : PauseCeiling.cap(config.pausePrincipalCeiling(),
                config.pauseBrokerCeiling(), pausedPrincipals, principal.connections, requestBytes, windowMs, base);
        double goal = ProducePolicy.goal(target, base, floor, cap);
        if (principal.limiter == null) {
            // Its sensor was created with the default quota: start from the default's history.
            principal.limiter = defaultLimiter.copy();
        }
        double limited = Double.isNaN(bytesInWindow) ? principal.limiter.apply(goal, now) : Double.NaN;
        // The quota halves at most once per window on its way to the ceiling: a jump would earn one
        // throttle of bytesInWindow / cap - W.
        double ceiling = ceilingInForce ? principal.limiter.peek(cap, now) : Double.POSITIVE_INFINITY;
        double current = Double.isNaN(principal.quota) ? defaultQuota : principal.quota;
        double next = ProducePolicy.next(goal, new ProducePolicy.Inputs(target, base, current, cap, bytesInWindow,
                windowMs, config.stepDownThrottleMs(), config.maxThrottleMs()), limited, ceiling);
        principal.limiter.force(next, now);
        return next;
    }

    /** The quota of principals without state of their own (a new sensor gets it); published before the flags. */
    private double tickDefault(double target, long now, boolean ceilingInForce, int pausedPrincipals,
                               Changes changes) {
        double base = config.baseBytesPerSecond();
        double defaultGoal = target >= base ? base
                : Math.max(target, PrincipalQuota.floor(base, config.pauseBytesPerSecond(), 1,
                        config.assumedRequestBytes(), config.pauseThrottleMs()));
        double defaultWanted = defaultLimiter.apply(defaultGoal, now);
        double previousDefault = defaultQuota;
        double nextDefault = PrincipalQuota.settle(previousDefault, defaultWanted, target, base);
        if (ceilingInForce) {
            nextDefault = Math.min(nextDefault, PauseCeiling.cap(config.pausePrincipalCeiling(),
                    config.pauseBrokerCeiling(), pausedPrincipals + 1, 1, config.assumedRequestBytes(),
                    config.stepDownIntervalMs(), base));
        }
        defaultLimiter.force(nextDefault, now);
        if (Double.compare(nextDefault, previousDefault) != 0) {
            defaultQuota = nextDefault; // publish before raising the flags
        }
        changes.count(previousDefault, nextDefault);
        return nextDefault;
    }

    /** Counts the tick's changes and raises the reset flags: now after a change, once more at the next tick. */
    private void publishChanges(Changes changes, double target, double nextDefault) {
        if (changes.changed > 0) {
            metrics.countChanges(changes.changed, changes.down);
            raiseResetFlags();
            // A sensor created with the old quota just after the broker's reset scan would keep
            // it until the next change: ask for one more scan at the next tick.
            reRaise = true;
            LOG.info("volume-quota engine #{}: {} PRODUCE quota(s) changed, {} of them down (per-principal quotas and"
                            + " the default for new principals); target {} B/s, default {} B/s, highest in force {} B/s,"
                            + " {} principal(s) tracked", id,
                    changes.changed, changes.down, target, nextDefault, metrics.highestQuota, producers.size());
        } else if (reRaise) {
            reRaise = false;
            raiseResetFlags();
        }
    }

    private void raiseResetFlags() {
        for (AtomicBoolean flag : resetFlags) {
            flag.set(true);
        }
    }

    private void logStatus(Decision valid, String problem, double target) {
        String status = valid != null
                ? "decision " + valid.state() + " factor " + valid.throttleFactor()
                        + (valid.causedByMissingData() ? " (caused by missing data)" : "")
                : "no valid decision (" + problem + "), applying on-missing " + config.onMissing();
        if (status.equals(lastStatus)) {
            return;
        }
        lastStatus = status;
        if (valid != null) {
            LOG.info("volume-quota engine #{}: {} decided at {}, target {} B/s", id, status, valid.decidedAt(), target);
        } else {
            LOG.warn("volume-quota engine #{}: {}, target {} B/s", id, status, target);
        }
    }
}
