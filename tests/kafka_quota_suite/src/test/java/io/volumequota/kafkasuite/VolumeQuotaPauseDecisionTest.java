package io.volumequota.kafkasuite;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;

import io.volumequota.kafkasuite.VolumeQuotaSuite.State;
import kafka.api.QuotaTestClients;
import kafka.server.KafkaBroker;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.server.quota.ClientQuotaCallback;
import org.apache.kafka.server.quota.ClientQuotaType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The decision against the operator's client-id quotas of Kafka's {@code ClientIdQuotaTest} set-up
 * (a default client-id quota of 8000 B/s): the stricter of the two PRODUCE quotas is in force,
 * checked with Kafka's own helpers ({@code waitForQuotaUpdate} reads the broker's quota managers,
 * {@code produceUntilThrottled} and {@code verifyProduceThrottle} the broker's and the producer's
 * throttle metrics). The base is finite here (16000 B/s, above the set-up's 8000). The sensor's tags are the ones the broker's callback gives (they
 * may differ from Kafka's client-id tags while the decision restricts). run-kafka-quota-tests.sh
 * selects the two tests below, not the inherited ones, which need an unlimited base.
 */
public class VolumeQuotaPauseDecisionTest extends kafka.api.ClientIdQuotaTest {

    static final long BASE = 16000;
    static final long PAUSE_FLOOR = 4000;
    static final long UNLIMITED = Long.MAX_VALUE;

    private final Path decisionFile = VolumeQuotaSuite.newDecisionFile(State.OPEN, 1.0);

    public VolumeQuotaPauseDecisionTest() {
        Properties config = serverConfig();
        VolumeQuotaSuite.addCallbackConfig(config, decisionFile);
        config.setProperty("volume.quota.produce.base.bytes.per.second", Long.toString(BASE));
        config.setProperty("volume.quota.pause.bytes.per.second", Long.toString(PAUSE_FLOOR));
        // The producer's requests are a few bytes and nothing is in the rate window yet: with a
        // small planned request and no step-down ratio, the floor in force is the configured one
        // at once (docs/broker-plugin.md, "The PAUSE bound").
        config.setProperty("volume.quota.assumed.request.bytes", "100");
        config.setProperty("volume.quota.max.step.down.ratio", "1000000");
        // Kafka's own tests take the group protocol from their parameter; these two are not
        // parameterized (the consumer group protocol plays no part in PRODUCE quotas).
        consumerConfig().setProperty(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
    }

    @BeforeEach
    @Override
    public void setUp(TestInfo testInfo) {
        super.setUp(testInfo);
        VolumeQuotaSuite.assertCallbackInForce(brokers(), State.OPEN,
                getClass().getSimpleName() + "." + testInfo.getDisplayName());
    }

    /** Kafka's client-id test clients, reading the PRODUCE sensor under the callback's tags. */
    @Override
    public QuotaTestClients createQuotaTestClients(String topic, KafkaBroker leader) {
        QuotaTestClients kafkas = super.createQuotaTestClients(topic, leader);
        ClientQuotaCallback callback = leader.dataPlaneRequestProcessor().quotas().clientQuotaCallbackPlugin()
                .orElseThrow(() -> new AssertionError("the broker has no client quota callback")).get();
        return new QuotaTestClients(topic, leader, producerClientId(), consumerClientId(), kafkas.producer(),
                kafkas.consumer(), kafkas.adminClient()) {
            @Override
            public void overrideQuotas(long producerQuota, long consumerQuota, double requestQuota) {
                kafkas.overrideQuotas(producerQuota, consumerQuota, requestQuota);
            }

            @Override
            public void removeQuotaOverrides() {
                kafkas.removeQuotaOverrides();
            }

            @Override
            public KafkaPrincipal userPrincipal() {
                return KafkaPrincipal.ANONYMOUS;
            }

            @Override
            public scala.collection.immutable.Map<String, String> quotaMetricTags(String clientId) {
                Map<String, String> tags = callback.quotaMetricTags(ClientQuotaType.PRODUCE, KafkaPrincipal.ANONYMOUS,
                        clientId);
                return scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(tags));
            }
        };
    }

    private void decide(State state, String testName) throws IOException {
        VolumeQuotaSuite.writeDecision(decisionFile, state, state == State.OPEN ? 1.0 : 0.0);
        VolumeQuotaSuite.assertCallbackInForce(brokers(), state, getClass().getSimpleName() + "." + testName);
    }

    @Test
    public void thePauseFloorIsStricterThanAnUnlimitedOperatorQuota() throws IOException {
        QuotaTestClients clients = quotaTestClients();
        clients.overrideQuotas(UNLIMITED, UNLIMITED, (double) UNLIMITED);

        decide(State.PAUSE, "thePauseFloorIsStricterThanAnUnlimitedOperatorQuota");
        // PRODUCE: the floor; FETCH and REQUEST: the operator's, whatever the decision.
        clients.waitForQuotaUpdate(PAUSE_FLOOR, UNLIMITED, (double) UNLIMITED, leaderNode());
        clients.produceUntilThrottled(1000, true);
        clients.verifyProduceThrottle(true, true, true);
    }

    @Test
    public void anOperatorQuotaStricterThanThePauseFloorStaysInForce() throws IOException {
        QuotaTestClients clients = quotaTestClients();
        clients.overrideQuotas(2000, 250, (double) UNLIMITED);
        clients.waitForQuotaUpdate(2000, 250, (double) UNLIMITED, leaderNode());

        decide(State.PAUSE, "anOperatorQuotaStricterThanThePauseFloorStaysInForce");
        clients.waitForQuotaUpdate(2000, 250, (double) UNLIMITED, leaderNode());
        clients.produceUntilThrottled(1000, true);
        clients.verifyProduceThrottle(true, true, true);
    }
}
