package io.volumequota.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.strimzi.api.kafka.model.common.template.AdditionalVolume;
import io.strimzi.api.kafka.model.kafka.Kafka;
import io.strimzi.api.kafka.model.kafka.KafkaClusterSpec;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The callback's decision consumer on a fresh cluster. Strimzi starts the Entity Operator (and
 * with it the User Operator, which creates the KafkaUser Secret volume-quota-callback) only once
 * the brokers run, so the brokers start before that Secret exists: its volume must be optional,
 * and the consumer must pick the certificate up when the Secret appears, without a broker
 * restart. The broker resolves its own config providers once, at start (KafkaConfig, the same
 * AbstractConfig resolution as here); the callback creates its KafkaConsumer from the
 * `volume.quota.decision.consumer.*` settings again after every failure, and a consumer resolves
 * the config providers defined in its own settings each time it is created.
 *
 * <p>Here: the recipe's settings, with /mnt/volume-quota moved to a temporary directory; the
 * cluster CA Secret's files present (Strimzi creates it before any broker), the user Secret's
 * directory empty (an optional Secret volume that does not exist yet); the consumer cannot be
 * created; then the kubelet writes the Secret's files, and the same settings must now create it.
 * The certificates come from openssl, the PKCS#12 truststore from keytool, as Strimzi makes
 * them.
 */
class CallbackCredentialsTest {
    private static final String MNT = "/mnt/volume-quota";
    private static final String CONSUMER = "volume.quota.decision.consumer.";

    @TempDir
    Path mnt;

    @Test
    void theUserSecretIsOptionalForTheBrokerPods() {
        for (Path file : List.of(Recipe.KAFKA, Recipe.KAFKA_IMAGE_VOLUME)) {
            AdditionalVolume user = volumes(file).get("volume-quota-callback-user");
            assertEquals("volume-quota-callback", user.getSecret().getSecretName());
            assertEquals(Boolean.TRUE, user.getSecret().getOptional(), file.toString());
        }
    }

    @Test
    void theConsumerStartsOnceTheUserSecretAppearsWithoutABrokerRestart() throws Exception {
        for (Path file : List.of(Recipe.KAFKA, Recipe.KAFKA_IMAGE_VOLUME)) {
            Path root = Files.createTempDirectory(mnt, "mnt");
            Path user = Files.createDirectories(root.resolve("callback-user"));
            clusterCaSecret(Files.createDirectories(root.resolve("cluster-ca")));

            Map<String, Object> broker = new TreeMap<>();
            config(file).forEach((key, value) -> broker.put(key, value.replace(MNT, root.toString())));
            // Broker start: its own config providers, resolved once.
            Map<String, Object> started = new HashMap<>(new AbstractConfig(new ConfigDef(), broker).originals());
            Map<String, Object> consumer = new HashMap<>();
            started.forEach((key, value) -> {
                if (key.startsWith(CONSUMER)) {
                    consumer.put(key.substring(CONSUMER.length()), value);
                }
            });

            // The bootstrap Service's name resolves only inside the cluster; the consumer looks it
            // up when it is created (it connects only on its first poll).
            consumer.put("bootstrap.servers", "127.0.0.1:9093");

            KafkaException before = assertThrows(KafkaException.class, () -> create(consumer).close(),
                    file + ": a consumer without the user's certificate");
            assertTrue(String.valueOf(causes(before)).contains("PEM"), file + ": " + causes(before));

            userSecret(user);
            try (KafkaConsumer<byte[], byte[]> created = create(consumer)) {
                assertEquals(0, created.assignment().size());
            }
        }
    }

    private static String causes(Throwable error) {
        StringBuilder text = new StringBuilder();
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            text.append(cause).append("; ");
        }
        return text.toString();
    }

    private static KafkaConsumer<byte[], byte[]> create(Map<String, Object> properties) {
        return new KafkaConsumer<>(properties, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** The cluster CA Secret as Strimzi writes it during a CA key replacement: two CA certificates. */
    private static void clusterCaSecret(Path directory) throws Exception {
        Path work = Files.createTempDirectory("ca");
        run(work, "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", "old.key", "-out", "old.crt", "-subj", "/O=io.strimzi/CN=cluster-ca v0", "-days", "2");
        run(work, "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", "new.key", "-out", "new.crt", "-subj", "/O=io.strimzi/CN=cluster-ca v1", "-days", "2");
        String password = "truststore-password";
        for (String alias : List.of("old", "new")) {
            run(work, "keytool", "-importcert", "-noprompt", "-alias", alias, "-file", alias + ".crt",
                    "-keystore", directory.resolve("ca.p12").toString(), "-storetype", "PKCS12",
                    "-storepass", password);
        }
        Files.writeString(directory.resolve("ca.password"), password, StandardCharsets.US_ASCII);
        Files.copy(work.resolve("new.crt"), directory.resolve("ca.crt"));
        Files.copy(work.resolve("old.crt"), directory.resolve("ca-2026-11-26T10-00-00Z.crt"));
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (var in = Files.newInputStream(directory.resolve("ca.p12"))) {
            store.load(in, password.toCharArray());
        }
        assertEquals(2, store.size());
    }

    private static void userSecret(Path directory) throws Exception {
        run(directory, "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", "user.key", "-out", "user.crt", "-subj", "/CN=volume-quota-callback", "-days", "2");
    }

    private static void run(Path directory, String... command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).directory(directory.toFile()).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), String.join(" ", command));
        assertEquals(0, process.exitValue(), String.join(" ", command) + ": " + output);
    }

    private static KafkaClusterSpec kafka(Path file) {
        List<HasMetadata> resources = StrimziYaml.load(file);
        return Recipe.named(resources, Kafka.class, Recipe.CLUSTER).getSpec().getKafka();
    }

    private static Map<String, String> config(Path file) {
        Map<String, String> config = new TreeMap<>();
        kafka(file).getConfig().forEach((key, value) -> config.put(key, String.valueOf(value)));
        return config;
    }

    private static Map<String, AdditionalVolume> volumes(Path file) {
        Map<String, AdditionalVolume> volumes = new HashMap<>();
        kafka(file).getTemplate().getPod().getVolumes().forEach(volume -> volumes.put(volume.getName(), volume));
        return volumes;
    }
}
