package io.volumequota.broker;

import static io.volumequota.broker.TestSupport.T0;
import static io.volumequota.broker.TestSupport.decisionJson;
import static io.volumequota.broker.TestSupport.writeAtomically;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.Sanitizer;
import org.apache.kafka.server.quota.ClientQuotaEntity;
import org.apache.kafka.server.quota.ClientQuotaManager;
import org.apache.kafka.server.quota.ClientQuotaType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Quotas an operator sets with kafka-configs / alterClientQuotas (Kafka's eight levels of user /
 * client-id precedence) stay in force with the callback installed, and PRODUCE gets the smaller
 * of the operator's quota and the decision's. The entities are the broker's own
 * ({@code ClientQuotaManager.KafkaQuotaEntity}), as the broker hands them to the callback.
 */
class OperatorQuotasTest {

    private static final double BASE = 10 * 1024 * 1024;
    private static final double FLOOR = 128 * 1024;
    private static final double KIB_256 = 256 * 1024;
    private static final String DEFAULT = "<default>";
    private static final KafkaPrincipal ALICE = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice");
    private static final KafkaPrincipal BOB = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "bob");
    private static final KafkaPrincipal PUBLISHER = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "publisher");

    @TempDir
    Path dir;

    private final TestSupport.MutableClock clock = new TestSupport.MutableClock(T0);
    private VolumeQuotaCallback callback;

    @AfterEach
    void closeCallback() {
        if (callback != null) {
            callback.close();
        }
    }

    /** A callback under {@code state}; the test drives reload() itself. */
    private void decide(String state, double factor) throws IOException {
        Path file = dir.resolve("decision.json");
        writeAtomically(file, decisionJson(state, factor, clock.instant(), Duration.ofSeconds(30)));
        if (callback == null) {
            Map<String, Object> config = TestSupport.baseConfig(file);
            config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, "3600000");
            config.put(VolumeQuotaConfig.MAX_STEP_DOWN_RATIO, "1e12");
            callback = new VolumeQuotaCallback(clock);
            callback.configure(config);
        } else {
            callback.reload();
        }
    }

    /** The broker's entity for a quota set on {@code user} and/or {@code clientId} (null: not part of it). */
    private static ClientQuotaEntity entity(String user, String clientId) {
        ClientQuotaEntity.ConfigEntity userEntity = user == null ? null
                : DEFAULT.equals(user) ? ClientQuotaManager.DEFAULT_USER_ENTITY
                : new ClientQuotaManager.UserEntity(Sanitizer.sanitize(user));
        ClientQuotaEntity.ConfigEntity clientEntity = clientId == null ? null
                : DEFAULT.equals(clientId) ? ClientQuotaManager.DEFAULT_USER_CLIENT_ID
                : new ClientQuotaManager.ClientIdEntity(clientId);
        return new ClientQuotaManager.KafkaQuotaEntity(userEntity, clientEntity);
    }

    private Map<String, String> tags(ClientQuotaType type, KafkaPrincipal principal, String clientId) {
        return callback.quotaMetricTags(type, principal, clientId);
    }

    private Double limit(ClientQuotaType type, KafkaPrincipal principal, String clientId) {
        return callback.quotaLimit(type, tags(type, principal, clientId));
    }

    private static Map<String, String> kafkaTags(String user, String clientId) {
        return Map.of("user", user, "client-id", clientId);
    }

    @ParameterizedTest
    @EnumSource(value = ClientQuotaType.class, names = {"FETCH", "REQUEST", "CONTROLLER_MUTATION"})
    void anOperatorQuotaOfTheOtherTypesIsKafkasOwn(ClientQuotaType type) throws IOException {
        decide("PAUSE", 0.0);
        callback.updateQuota(type, entity("alice", null), 300.0);
        assertEquals(kafkaTags("alice", ""), tags(type, ALICE, "app"));
        assertEquals(300.0, limit(type, ALICE, "app"), 1e-9, "PAUSE does not touch " + type);
        assertNull(limit(type, BOB, "app"), "no quota for a user the operator did not name");
        callback.removeQuota(type, entity("alice", null));
        assertNull(limit(type, ALICE, "app"));
    }

    @Test
    void theEightLevelsOfPrecedenceAndTheirTags() throws IOException {
        decide("OPEN", 1.0);
        ClientQuotaType fetch = ClientQuotaType.FETCH;
        callback.updateQuota(fetch, entity(DEFAULT, null), 1000.0);
        callback.updateQuota(fetch, entity("alice", "app"), 500.0);
        callback.updateQuota(fetch, entity(null, DEFAULT), 100.0);
        callback.updateQuota(fetch, entity(null, "batch"), 50.0);
        assertEquals(kafkaTags("alice", "app"), tags(fetch, ALICE, "app"));
        assertEquals(500.0, limit(fetch, ALICE, "app"), 1e-9, "/users/alice/clients/app");
        assertEquals(kafkaTags("alice", ""), tags(fetch, ALICE, "other"));
        assertEquals(1000.0, limit(fetch, ALICE, "other"), 1e-9, "/users/<default> before any client quota");
        assertEquals(1000.0, limit(fetch, BOB, "batch"), 1e-9);

        callback.removeQuota(fetch, entity(DEFAULT, null));
        assertEquals(kafkaTags("", "batch"), tags(fetch, BOB, "batch"));
        assertEquals(50.0, limit(fetch, BOB, "batch"), 1e-9, "/clients/batch");
        assertEquals(100.0, limit(fetch, BOB, "x"), 1e-9, "/clients/<default>");

        callback.updateQuota(fetch, entity("bob", DEFAULT), 70.0);
        assertEquals(kafkaTags("bob", "batch"), tags(fetch, BOB, "batch"));
        assertEquals(70.0, limit(fetch, BOB, "batch"), 1e-9, "/users/bob/clients/<default> before /clients/batch");
        callback.updateQuota(fetch, entity(DEFAULT, "batch"), 60.0);
        assertEquals(60.0, limit(fetch, ALICE, "batch"), 1e-9, "/users/<default>/clients/batch");
        callback.updateQuota(fetch, entity(DEFAULT, DEFAULT), 40.0);
        assertEquals(40.0, limit(fetch, ALICE, "y"), 1e-9, "/users/<default>/clients/<default>");
        callback.updateQuota(fetch, entity("alice", null), 30.0);
        assertEquals(kafkaTags("alice", ""), tags(fetch, ALICE, "y"));
        assertEquals(30.0, limit(fetch, ALICE, "y"), 1e-9, "/users/alice before /users/<default>/clients/...");
    }

    @Test
    void userTagsAreSanitizedLikeKafkas() throws IOException {
        decide("OPEN", 1.0);
        KafkaPrincipal dn = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "CN=app,O=example");
        callback.updateQuota(ClientQuotaType.FETCH, entity("CN=app,O=example", null), 123.0);
        assertEquals(kafkaTags("CN%3Dapp%2CO%3Dexample", ""), tags(ClientQuotaType.FETCH, dn, "c"));
        assertEquals(123.0, limit(ClientQuotaType.FETCH, dn, "c"), 1e-9);
        assertEquals(kafkaTags("CN%3Dapp%2CO%3Dexample", ""), tags(ClientQuotaType.PRODUCE, dn, "c"),
                "our per-principal PRODUCE sensor has the same user tag as Kafka's user quota");
    }

    @Test
    void anOperatorChangeAsksTheBrokerToReReadThatTypesQuotas() throws IOException {
        decide("OPEN", 1.0);
        while (callback.quotaResetRequired(ClientQuotaType.PRODUCE)) {
            // the initial load
        }
        callback.updateQuota(ClientQuotaType.FETCH, entity("alice", null), KIB_256);
        assertTrue(callback.quotaResetRequired(ClientQuotaType.FETCH));
        assertFalse(callback.quotaResetRequired(ClientQuotaType.FETCH), "once per change");
        assertFalse(callback.quotaResetRequired(ClientQuotaType.PRODUCE), "only the type that changed");
        callback.removeQuota(ClientQuotaType.FETCH, entity("alice", null));
        assertTrue(callback.quotaResetRequired(ClientQuotaType.FETCH));
        callback.updateQuota(ClientQuotaType.PRODUCE, entity("alice", null), KIB_256);
        assertTrue(callback.quotaResetRequired(ClientQuotaType.PRODUCE));
    }

    @Test
    void produceInOpenIsTheOperatorsAlone() throws IOException {
        decide("OPEN", 1.0);
        callback.updateQuota(ClientQuotaType.PRODUCE, entity("alice", null), KIB_256);
        assertEquals(KIB_256, limit(ClientQuotaType.PRODUCE, ALICE, "app"), 1e-9);
        callback.updateQuota(ClientQuotaType.PRODUCE, entity("carol", null), 2 * BASE);
        KafkaPrincipal carol = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "carol");
        assertEquals(2 * BASE, limit(ClientQuotaType.PRODUCE, carol, "app"), 1e-9, "above our base: still the operator's");
        assertEquals(BASE, limit(ClientQuotaType.PRODUCE, BOB, "app"), 1e-9, "no operator quota: our base");
    }

    @Test
    void produceInThrottleIsTheSmallerOfTheOperatorsAndOurs() throws IOException {
        decide("THROTTLE", 0.5);
        callback.updateQuota(ClientQuotaType.PRODUCE, entity("alice", null), KIB_256);
        callback.updateQuota(ClientQuotaType.PRODUCE, entity("bob", null), 8 * 1024 * 1024);
        assertEquals(kafkaTags("alice", ""), tags(ClientQuotaType.PRODUCE, ALICE, "app"));
        assertEquals(KIB_256, limit(ClientQuotaType.PRODUCE, ALICE, "app"), 1e-9, "the operator's is smaller");
        assertEquals(BASE * 0.5, limit(ClientQuotaType.PRODUCE, BOB, "app"), 1e-9, "ours is smaller");
        KafkaPrincipal carol = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "carol");
        assertEquals(BASE * 0.5, limit(ClientQuotaType.PRODUCE, carol, "app"), 1e-9, "no operator quota: ours");
        callback.removeQuota(ClientQuotaType.PRODUCE, entity("alice", null));
        assertEquals(BASE * 0.5, limit(ClientQuotaType.PRODUCE, ALICE, "app"), 1e-9, "removed: ours");
    }

    @Test
    void produceInPauseIsTheFloorWhenTheOperatorsIsLarger() throws IOException {
        decide("PAUSE", 0.0);
        callback.updateQuota(ClientQuotaType.PRODUCE, entity("alice", null), 1024 * 1024);
        callback.updateQuota(ClientQuotaType.PRODUCE, entity("bob", null), 1000);
        assertEquals(FLOOR, limit(ClientQuotaType.PRODUCE, ALICE, "app"), 1e-9);
        assertEquals(1000, limit(ClientQuotaType.PRODUCE, BOB, "app"), 1e-9);
    }

    @Test
    void anExcludedPrincipalKeepsTheOperatorsQuotaOnly() throws IOException {
        decide("PAUSE", 0.0);
        assertNull(limit(ClientQuotaType.PRODUCE, PUBLISHER, "publisher-1"));
        callback.updateQuota(ClientQuotaType.PRODUCE, entity("publisher", null), 1024 * 1024);
        assertEquals(1024 * 1024, limit(ClientQuotaType.PRODUCE, PUBLISHER, "publisher-1"), 1e-9);
    }

    @Test
    void aUserAndClientIdOperatorQuotaKeepsItsSensorAndTakesTheSmaller() throws IOException {
        decide("THROTTLE", 0.5);
        callback.updateQuota(ClientQuotaType.PRODUCE, entity("alice", "app"), KIB_256);
        assertEquals(kafkaTags("alice", "app"), tags(ClientQuotaType.PRODUCE, ALICE, "app"));
        assertEquals(KIB_256, limit(ClientQuotaType.PRODUCE, ALICE, "app"), 1e-9);
        assertEquals(kafkaTags("alice", ""), tags(ClientQuotaType.PRODUCE, ALICE, "other"),
                "the principal's other client ids share its own sensor");
        assertEquals(BASE * 0.5, limit(ClientQuotaType.PRODUCE, ALICE, "other"), 1e-9);
        callback.updateQuota(ClientQuotaType.PRODUCE, entity("alice", "app"), 64 * 1024 * 1024);
        assertEquals(BASE * 0.5, limit(ClientQuotaType.PRODUCE, ALICE, "app"), 1e-9, "ours is smaller");
    }

    @Test
    void aClientIdOperatorQuotaIsSharedInOpenAndPerPrincipalUnderOurs() throws IOException {
        decide("OPEN", 1.0);
        callback.updateQuota(ClientQuotaType.PRODUCE, entity(null, DEFAULT), 64 * 1024 * 1024);
        callback.updateQuota(ClientQuotaType.PRODUCE, entity(null, "small"), 1000);
        assertEquals(kafkaTags("", "app"), tags(ClientQuotaType.PRODUCE, ALICE, "app"), "Kafka's own in OPEN");
        assertEquals(64 * 1024 * 1024, limit(ClientQuotaType.PRODUCE, ALICE, "app"), 1e-9);

        decide("THROTTLE", 0.5);
        assertEquals(kafkaTags("alice", "app"), tags(ClientQuotaType.PRODUCE, ALICE, "app"),
                "a sensor shared by all users would escape our per-principal quota");
        assertEquals(BASE * 0.5, limit(ClientQuotaType.PRODUCE, ALICE, "app"), 1e-9);
        assertEquals(1000, limit(ClientQuotaType.PRODUCE, ALICE, "small"), 1e-9, "/clients/small is smaller");
        assertEquals(kafkaTags("", "app"), tags(ClientQuotaType.PRODUCE, PUBLISHER, "app"), "excluded: Kafka's");
        assertEquals(64 * 1024 * 1024, limit(ClientQuotaType.PRODUCE, PUBLISHER, "app"), 1e-9);
    }
}
