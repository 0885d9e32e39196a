package io.volumequota.broker;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Quota;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.Sanitizer;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.quota.ClientQuotaCallback;
import org.apache.kafka.server.quota.ClientQuotaEntity;
import org.apache.kafka.server.quota.ClientQuotaType;

/**
 * The quotas an operator sets with {@code kafka-configs} / {@code alterClientQuotas} for one
 * quota type, kept by Kafka's own code: the {@code DefaultQuotaCallback} of a private
 * {@code ClientQuotaManager} of the broker's Kafka version (eight levels of user / client-id
 * precedence, {@code <default>} entities, sanitised metric tags).
 *
 * <p>Kafka's default callback is an inner class of {@code ClientQuotaManager} that reads the
 * manager's state ({@code quotaTypesEnabled}), so it only works inside a manager: this class
 * builds one (with its own {@link Metrics}, never reported, and Kafka's idle throttled-channel
 * reaper thread), hands it every update and removal through the manager's {@code updateQuota}
 * (which keeps that state) and asks the manager's callback for tags and limits. The manager is
 * {@code kafka.server.ClientQuotaManager} (Scala) on Kafka 4.0 and 4.1 and
 * {@code org.apache.kafka.server.quota.ClientQuotaManager} (Java) from 4.2; the plugin compiles
 * against kafka-clients only, so both are reached by reflection, once, at configure time.
 */
final class OperatorQuotas implements AutoCloseable {

    static final String USER_TAG = "user";
    static final String CLIENT_ID_TAG = "client-id";

    private final ClientQuotaType type;
    private final Kafka kafka;
    private final Object manager;
    private final ClientQuotaCallback callback;

    private OperatorQuotas(ClientQuotaType type, Kafka kafka, Object manager, ClientQuotaCallback callback) {
        this.type = type;
        this.kafka = kafka;
        this.manager = manager;
        this.callback = callback;
    }

    /** Kafka's quotas for {@code type}, from the classes {@code loader} sees (the broker's). */
    static OperatorQuotas create(ClientQuotaType type, ClassLoader loader, String threadPrefix) {
        Kafka kafka = Kafka.find(loader);
        try {
            Object manager = kafka.newManager(type, threadPrefix);
            Field field = manager.getClass().getDeclaredField("quotaCallback");
            field.setAccessible(true);
            return new OperatorQuotas(type, kafka, manager, (ClientQuotaCallback) field.get(manager));
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException("cannot build Kafka's own quota manager " + kafka.manager.getName()
                    + " for " + type + ": " + e, e);
        }
    }

    /** Kafka's tags for a request: the level of precedence the operator's quotas select. */
    Map<String, String> metricTags(KafkaPrincipal principal, String clientId) {
        return callback.quotaMetricTags(type, principal, clientId);
    }

    /** The operator's quota for a sensor with these tags, or null for none. */
    Double limit(Map<String, String> tags) {
        return callback.quotaLimit(type, tags);
    }

    /** Sets (value non-null) or removes (null) the operator's quota for {@code entity}. */
    void set(ClientQuotaEntity entity, Double value) {
        Object user = null;
        Object client = null;
        for (ClientQuotaEntity.ConfigEntity part : entity.configEntities()) {
            switch (part.entityType()) {
                case USER -> user = kafka.user(Sanitizer.sanitize(part.name()));
                case DEFAULT_USER -> user = kafka.defaultUser;
                case CLIENT_ID -> client = kafka.clientId(part.name());
                case DEFAULT_CLIENT_ID -> client = kafka.defaultClientId;
                default -> throw new IllegalArgumentException("not a user / client-id quota: " + entity);
            }
        }
        Quota quota = value == null ? null : Quota.upperBound(value);
        try {
            kafka.updateQuota.invoke(manager, kafka.optional.apply(user), kafka.optional.apply(client),
                    kafka.optional.apply(quota));
        } catch (InvocationTargetException e) {
            throw new IllegalStateException("Kafka's quota manager rejected " + entity + ": " + e.getCause(),
                    e.getCause());
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        try {
            kafka.manager.getMethod("shutdown").invoke(manager);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot stop Kafka's quota manager for " + type, e);
        }
    }

    /** How one Kafka version spells the manager, its entities and its optional values. */
    private static final class Kafka {
        final Class<?> manager;
        final Constructor<?> constructor;
        final boolean scala;
        final Method updateQuota;
        final Function<Object, Object> optional;
        final Constructor<?> userEntity;
        final Constructor<?> clientIdEntity;
        final Object defaultUser;
        final Object defaultClientId;
        final Class<?> quotaType;
        final Class<?> managerConfig;

        private Kafka(ClassLoader loader, boolean scala) throws ReflectiveOperationException {
            this.scala = scala;
            String name = scala ? "kafka.server.ClientQuotaManager" : "org.apache.kafka.server.quota.ClientQuotaManager";
            manager = Class.forName(name, true, loader);
            quotaType = Class.forName("org.apache.kafka.server.quota.QuotaType", true, loader);
            managerConfig = Class.forName("org.apache.kafka.server.config.ClientQuotaManagerConfig", true, loader);
            userEntity = Class.forName(name + "$UserEntity", true, loader).getConstructor(String.class);
            clientIdEntity = Class.forName(name + "$ClientIdEntity", true, loader).getConstructor(String.class);
            if (scala) {
                Class<?> option = Class.forName("scala.Option", true, loader);
                Method apply = option.getMethod("apply", Object.class);
                optional = value -> invokeStatic(apply, value);
                defaultUser = Class.forName(name + "$DefaultUserEntity$", true, loader).getField("MODULE$").get(null);
                defaultClientId = Class.forName(name + "$DefaultClientIdEntity$", true, loader)
                        .getField("MODULE$").get(null);
                constructor = manager.getConstructor(managerConfig, Metrics.class, quotaType, Time.class,
                        String.class, option);
                updateQuota = manager.getMethod("updateQuota", option, option, option);
            } else {
                optional = Optional::ofNullable;
                defaultUser = manager.getField("DEFAULT_USER_ENTITY").get(null);
                defaultClientId = manager.getField("DEFAULT_USER_CLIENT_ID").get(null);
                constructor = manager.getConstructor(managerConfig, Metrics.class, quotaType, Time.class,
                        String.class);
                updateQuota = manager.getMethod("updateQuota", Optional.class, Optional.class, Optional.class);
            }
        }

        /** The Java manager (Kafka 4.2+) if the broker has it, else the Scala one (4.0, 4.1). */
        static Kafka find(ClassLoader loader) {
            try {
                Class.forName("org.apache.kafka.server.quota.ClientQuotaManager", false, loader);
                return new Kafka(loader, false);
            } catch (ClassNotFoundException e) {
                try {
                    return new Kafka(loader, true);
                } catch (ReflectiveOperationException | LinkageError scalaError) {
                    throw new IllegalStateException("neither Kafka 4.2+'s nor 4.0/4.1's ClientQuotaManager can be"
                            + " used: " + scalaError, scalaError);
                }
            } catch (ReflectiveOperationException | LinkageError e) {
                throw new IllegalStateException("Kafka's ClientQuotaManager cannot be used: " + e, e);
            }
        }

        /** Kafka's {@code QuotaType} of the same name as {@code type} (PRODUCE, FETCH, REQUEST, CONTROLLER_MUTATION). */
        private Object kafkaQuotaType(ClientQuotaType type) {
            for (Object constant : quotaType.getEnumConstants()) {
                if (((Enum<?>) constant).name().equals(type.name())) {
                    return constant;
                }
            }
            throw new IllegalStateException(quotaType.getName() + " has no " + type);
        }

        Object newManager(ClientQuotaType type, String threadPrefix) throws ReflectiveOperationException {
            Object kafkaType = kafkaQuotaType(type);
            Object config = managerConfig.getConstructor().newInstance();
            if (scala) {
                return constructor.newInstance(config, new Metrics(), kafkaType, Time.SYSTEM, threadPrefix,
                        optional.apply(null));
            }
            return constructor.newInstance(config, new Metrics(), kafkaType, Time.SYSTEM, threadPrefix);
        }

        Object user(String sanitizedUser) {
            return construct(userEntity, sanitizedUser);
        }

        Object clientId(String clientId) {
            return construct(clientIdEntity, clientId);
        }

        private static Object construct(Constructor<?> constructor, String argument) {
            try {
                return constructor.newInstance(argument);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }

        private static Object invokeStatic(Method method, Object argument) {
            try {
                return method.invoke(null, argument);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
