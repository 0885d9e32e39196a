package io.volumequota.kafkasuite;

import java.nio.file.Path;

import io.volumequota.kafkasuite.VolumeQuotaSuite.State;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/**
 * Kafka's {@code UserQuotaTest} (quotas per user over SASL_SSL/GSSAPI, default user quota),
 * run unchanged with volume-quota's callback installed on every broker and an OPEN decision.
 */
public class VolumeQuotaUserQuotaTest extends kafka.api.UserQuotaTest {

    private final Path decisionFile = VolumeQuotaSuite.newDecisionFile(State.OPEN, 1.0);

    public VolumeQuotaUserQuotaTest() {
        VolumeQuotaSuite.addCallbackConfig(serverConfig(), decisionFile);
    }

    @BeforeEach
    @Override
    public void setUp(TestInfo testInfo) {
        super.setUp(testInfo);
        VolumeQuotaSuite.assertCallbackInForce(brokers(), State.OPEN,
                getClass().getSimpleName() + "." + testInfo.getDisplayName());
    }
}
