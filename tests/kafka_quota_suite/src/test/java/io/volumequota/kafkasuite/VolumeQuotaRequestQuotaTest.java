package io.volumequota.kafkasuite;

import java.nio.file.Path;
import java.util.Properties;

import io.volumequota.kafkasuite.VolumeQuotaSuite.State;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/**
 * Kafka's {@code RequestQuotaTest} (request-time quotas, and produce and fetch quotas violated
 * together with them, for every API), run unchanged with volume-quota's callback installed on
 * the broker and an OPEN decision.
 */
public class VolumeQuotaRequestQuotaTest extends kafka.server.RequestQuotaTest {

    private final Path decisionFile = VolumeQuotaSuite.newDecisionFile(State.OPEN, 1.0);

    @Override
    public void brokerPropertyOverrides(Properties properties) {
        super.brokerPropertyOverrides(properties);
        VolumeQuotaSuite.addCallbackConfig(properties, decisionFile);
    }

    @BeforeEach
    @Override
    public void setUp(TestInfo testInfo) {
        super.setUp(testInfo);
        VolumeQuotaSuite.assertCallbackInForce(brokers(), State.OPEN,
                getClass().getSimpleName() + "." + testInfo.getDisplayName());
    }
}
