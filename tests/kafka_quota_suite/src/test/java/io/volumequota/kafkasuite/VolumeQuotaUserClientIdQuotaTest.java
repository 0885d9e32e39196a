package io.volumequota.kafkasuite;

import java.nio.file.Path;

import io.volumequota.kafkasuite.VolumeQuotaSuite.State;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/**
 * Kafka's {@code UserClientIdQuotaTest} (quotas per user and client id over mTLS),
 * run unchanged with volume-quota's callback installed on every broker and an OPEN decision.
 */
public class VolumeQuotaUserClientIdQuotaTest extends kafka.api.UserClientIdQuotaTest {

    private final Path decisionFile = VolumeQuotaSuite.newDecisionFile(State.OPEN, 1.0);

    public VolumeQuotaUserClientIdQuotaTest() {
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
