package io.volumequota.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.strimzi.api.kafka.model.common.template.AdditionalVolume;
import io.strimzi.api.kafka.model.common.template.ContainerEnvVar;
import io.strimzi.api.kafka.model.kafka.Kafka;
import io.strimzi.api.kafka.model.kafka.KafkaAuthorizationSimple;
import io.strimzi.api.kafka.model.kafka.KafkaClusterSpec;
import io.strimzi.api.kafka.model.kafka.listener.GenericKafkaListener;
import io.strimzi.api.kafka.model.kafka.listener.KafkaListenerAuthenticationTls;
import io.strimzi.api.kafka.model.nodepool.KafkaNodePool;
import io.strimzi.api.kafka.model.nodepool.ProcessRoles;
import io.strimzi.api.kafka.model.user.KafkaUser;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

/** The Kafka resource configures the callback the way Strimzi and the callback need it. */
class KafkaRecipeTest {
    private static final List<HasMetadata> CUSTOM_IMAGE = StrimziYaml.load(Recipe.KAFKA);
    private static final List<HasMetadata> IMAGE_VOLUME = StrimziYaml.load(Recipe.KAFKA_IMAGE_VOLUME);
    private static final Pattern PROVIDER_REFERENCE = Pattern.compile("\\$\\{([^:}]+):([^:}]+):([^}]+)}");

    private static KafkaClusterSpec kafka(List<HasMetadata> resources) {
        return Recipe.named(resources, Kafka.class, Recipe.CLUSTER).getSpec().getKafka();
    }

    private static Map<String, String> config(List<HasMetadata> resources) {
        Map<String, String> config = new TreeMap<>();
        kafka(resources).getConfig().forEach((key, value) -> config.put(key, String.valueOf(value)));
        return config;
    }

    @Test
    void theCallbackReadsItsDecisionsFromTheDecisionsTopic() {
        for (List<HasMetadata> route : List.of(CUSTOM_IMAGE, IMAGE_VOLUME)) {
            Map<String, String> config = config(route);
            assertEquals("io.volumequota.broker.VolumeQuotaCallback", config.get("client.quota.callback.class"));
            assertEquals("topic", config.get("volume.quota.decision.source"));
            assertEquals(Recipe.DECISIONS, config.get("volume.quota.decision.topic"));
            assertEquals("PAUSE", config.get("volume.quota.on.missing"));
            long base = Long.parseLong(config.get("volume.quota.produce.base.bytes.per.second"));
            long floor = Long.parseLong(config.get("volume.quota.pause.bytes.per.second"));
            assertTrue(0 < floor && floor <= base, "the PAUSE floor is > 0 and <= base");
            for (String ceiling : List.of("volume.quota.pause.principal.max.bytes.per.second",
                    "volume.quota.pause.broker.max.bytes.per.second")) {
                assertTrue(Long.parseLong(config.get(ceiling)) >= floor, ceiling + " is at least the floor");
            }
            // Strimzi's own quota plugin would set client.quota.callback.class itself.
            assertNull(kafka(route).getQuotas(), "spec.kafka.quotas must stay unset");
            assertEquals("SSL", config.get("volume.quota.decision.consumer.security.protocol"));
            assertEquals("my-cluster-kafka-bootstrap:9093",
                    config.get("volume.quota.decision.consumer.bootstrap.servers"));
        }
    }

    @Test
    void theConsumerSettingsAreOnesTheCallbackAccepts() {
        // deploy/broker-plugin (VolumeQuotaConfig): bootstrap.servers is required; it sets the
        // deserializers and enable.auto.commit itself and refuses them; it assign()s partition
        // 0 and joins no group, so a group.id would only ask for a group ACL nobody needs.
        Map<String, String> consumer = new TreeMap<>();
        config(CUSTOM_IMAGE).forEach((key, value) -> {
            if (key.startsWith("volume.quota.decision.consumer.")) {
                consumer.put(key.substring("volume.quota.decision.consumer.".length()), value);
            }
        });
        assertTrue(consumer.containsKey("bootstrap.servers"));
        for (String refused : List.of("key.deserializer", "value.deserializer", "enable.auto.commit", "group.id")) {
            assertTrue(!consumer.containsKey(refused), refused);
        }
    }

    @Test
    void theCallbackConsumerUsesTheTlsListenerWithClientCertificates() {
        GenericKafkaListener tls = kafka(CUSTOM_IMAGE).getListeners().stream()
                .filter(listener -> listener.getPort() == 9093).findFirst().orElseThrow();
        assertTrue(tls.isTls());
        assertTrue(tls.getAuth() instanceof KafkaListenerAuthenticationTls, "mTLS: principal User:CN=<user>");
        assertTrue(kafka(CUSTOM_IMAGE).getAuthorization() instanceof KafkaAuthorizationSimple,
                "ACLs are enforced, so the KafkaUsers' ACLs matter");
    }

    @Test
    void noKeyIsOneStrimziForbidsInSpecKafkaConfig() {
        // Strimzi's own lists, from the model: a key starting with a forbidden prefix is
        // dropped with a warning unless it is one of the exceptions.
        List<String> prefixes = split(KafkaClusterSpec.FORBIDDEN_PREFIXES);
        Set<String> exceptions = Set.copyOf(split(KafkaClusterSpec.FORBIDDEN_PREFIX_EXCEPTIONS));
        assertTrue(prefixes.contains("ssl."), "the model's list is the one meant: " + prefixes);
        for (List<HasMetadata> route : List.of(CUSTOM_IMAGE, IMAGE_VOLUME)) {
            List<String> forbidden = config(route).keySet().stream()
                    .filter(key -> !exceptions.contains(key))
                    .filter(key -> prefixes.stream().anyMatch(key.toLowerCase()::startsWith))
                    .toList();
            assertEquals(List.of(), forbidden);
        }
        // ... which is what lets the consumer's ssl.* keys through: they start with volume.
        assertTrue(config(CUSTOM_IMAGE).containsKey("volume.quota.decision.consumer.ssl.keystore.type"));
    }

    @Test
    void theExcludedPrincipalsAreTheAgentTheOperatorsCruiseControlAndTheBrokers() {
        String excluded = config(CUSTOM_IMAGE).get("volume.quota.excluded.principals");
        Set<String> principals = Set.copyOf(Arrays.asList(excluded.split(";")));
        assertEquals(Set.of(
                "User:CN=volume-quota-agent",
                "User:CN=my-cluster-entity-topic-operator,O=io.strimzi",
                "User:CN=my-cluster-cruise-control,O=io.strimzi",
                "User:CN=my-cluster-kafka,O=io.strimzi"), principals);
        assertEquals(excluded.strip(), excluded);
        assertTrue(Arrays.stream(excluded.split(";")).allMatch(entry -> entry.equals(entry.strip())),
                "no whitespace around entries (the callback would warn)");
        // The agent's entry is its KafkaUser's TLS principal.
        List<HasMetadata> users = StrimziYaml.load(Recipe.USERS);
        Recipe.named(users, KafkaUser.class, "volume-quota-agent");
        // The callback's consumer only reads: it is not excluded and needs not be.
        assertTrue(principals.stream().noneMatch(principal -> principal.contains("volume-quota-callback")));
    }

    @Test
    void everyConfigProviderReferenceResolvesToAMountedSecretKey() {
        String consumer = "volume.quota.decision.consumer.";
        for (List<HasMetadata> route : List.of(CUSTOM_IMAGE, IMAGE_VOLUME)) {
            Map<String, String> config = config(route);
            // The broker defines no provider of ours (it would resolve them once, at start);
            // the consumer defines its own, resolved each time the callback creates it.
            assertNull(config.get("config.providers"), "a broker-level provider resolves only at start");
            assertEquals("vqfiles", config.get(consumer + "config.providers"));
            Set<String> reserved = Set.of("strimzienv", "strimzisecrets", "strimzifile", "strimzidir");
            assertTrue(!reserved.contains(config.get(consumer + "config.providers")));
            assertEquals("org.apache.kafka.common.config.provider.DirectoryConfigProvider",
                    config.get(consumer + "config.providers.vqfiles.class"));
            String allowed = config.get(consumer + "config.providers.vqfiles.param.allowed.paths");

            Map<String, VolumeMount> mounts = mountsByPath(route);
            Map<String, AdditionalVolume> volumes = volumesByName(route);
            List<String> referenced = new ArrayList<>();
            config.forEach((key, value) -> {
                Matcher reference = PROVIDER_REFERENCE.matcher(value);
                while (reference.find()) {
                    assertTrue(key.startsWith(consumer), key + ": only the consumer resolves them");
                    assertEquals("vqfiles", reference.group(1), key);
                    String directory = reference.group(2);
                    assertTrue(directory.startsWith(allowed + "/"), key + " under allowed.paths");
                    VolumeMount mount = mounts.get(directory);
                    assertNotNull(mount, key + ": nothing mounted at " + directory);
                    AdditionalVolume volume = volumes.get(mount.getName());
                    referenced.add(volume.getSecret().getSecretName() + "/" + reference.group(3));
                }
            });
            assertEquals(List.of("my-cluster-cluster-ca-cert/ca.password", "volume-quota-callback/user.crt",
                    "volume-quota-callback/user.key"), referenced.stream().sorted().toList());
            // The truststore: the cluster CA Secret's ca.p12, which holds every CA certificate
            // of the Secret (Strimzi's Ca keeps the store and the *.crt entries in step).
            String truststore = config.get(consumer + "ssl.truststore.location");
            String caDirectory = truststore.substring(0, truststore.lastIndexOf('/'));
            AdditionalVolume ca = volumes.get(mounts.get(caDirectory).getName());
            assertEquals("my-cluster-cluster-ca-cert", ca.getSecret().getSecretName());
            assertEquals(List.of("ca.p12", "ca.password"),
                    ca.getSecret().getItems().stream().map(item -> item.getKey()).sorted().toList());
            assertEquals(caDirectory + "/ca.p12", truststore);
            assertEquals("PKCS12", config.get(consumer + "ssl.truststore.type"));
            assertEquals("PEM", config.get(consumer + "ssl.keystore.type"));
        }
    }

    @Test
    void additionalMountsAreUnderMntAndReadOnly() {
        // Strimzi refuses additional volume mounts outside /mnt (TemplateUtils.ALLOWED_MOUNT_PATH).
        for (List<HasMetadata> route : List.of(CUSTOM_IMAGE, IMAGE_VOLUME)) {
            for (VolumeMount mount : mountsByPath(route).values()) {
                assertTrue(mount.getMountPath().startsWith("/mnt/"), mount.getMountPath());
                assertEquals(Boolean.TRUE, mount.getReadOnly(), mount.getMountPath());
                assertTrue(volumesByName(route).containsKey(mount.getName()), mount.getName());
            }
        }
    }

    @Test
    void theTwoRoutesDifferOnlyInHowTheJarReachesTheClasspath() {
        KafkaClusterSpec customImage = kafka(CUSTOM_IMAGE);
        KafkaClusterSpec imageVolume = kafka(IMAGE_VOLUME);

        // Route 1: the custom image, nothing mounted for the jar.
        assertNotNull(customImage.getImage());
        assertNull(customImage.getTemplate().getKafkaContainer().getEnv());
        assertTrue(volumesByName(CUSTOM_IMAGE).values().stream().noneMatch(volume -> volume.getImage() != null));

        // Route 2: Strimzi's image, the jar's image mounted and named by CLASSPATH.
        assertNull(imageVolume.getImage(), "Strimzi's own image for spec.kafka.version");
        AdditionalVolume plugin = volumesByName(IMAGE_VOLUME).get("volume-quota-plugin");
        assertNotNull(plugin.getImage().getReference());
        VolumeMount pluginMount = mountsByPath(IMAGE_VOLUME).values().stream()
                .filter(mount -> mount.getName().equals("volume-quota-plugin")).findFirst().orElseThrow();
        Map<String, String> env = new HashMap<>();
        for (ContainerEnvVar variable : imageVolume.getTemplate().getKafkaContainer().getEnv()) {
            env.put(variable.getName(), variable.getValue());
        }
        assertEquals(Map.of("CLASSPATH", pluginMount.getMountPath() + "/*"), env);

        // Everything else is identical: the configuration, listeners, node pools.
        assertEquals(customImage.getConfig(), imageVolume.getConfig());
        assertEquals(customImage.getListeners(), imageVolume.getListeners());
        assertEquals(customImage.getVersion(), imageVolume.getVersion());
        assertEquals(Recipe.ofKind(CUSTOM_IMAGE, KafkaNodePool.class).stream().map(KafkaNodePool::getSpec).toList(),
                Recipe.ofKind(IMAGE_VOLUME, KafkaNodePool.class).stream().map(KafkaNodePool::getSpec).toList());
        Map<String, AdditionalVolume> withoutPlugin = new HashMap<>(volumesByName(IMAGE_VOLUME));
        withoutPlugin.remove("volume-quota-plugin");
        assertEquals(volumesByName(CUSTOM_IMAGE), withoutPlugin);
    }

    @Test
    void theNodePoolsUseTheV1ShapeAndBrokersHaveTheirOwnPool() {
        for (List<HasMetadata> route : List.of(CUSTOM_IMAGE, IMAGE_VOLUME)) {
            // Fields that kafka.strimzi.io/v1 dropped (the 0.51 model still reads them).
            assertNull(kafka(route).getReplicas(), "replicas belong to the KafkaNodePools");
            assertNull(kafka(route).getStorage(), "storage belongs to the KafkaNodePools");
            Map<String, List<ProcessRoles>> roles = Recipe.ofKind(route, KafkaNodePool.class).stream()
                    .collect(Collectors.toMap(pool -> pool.getMetadata().getName(), pool -> pool.getSpec().getRoles()));
            assertEquals(Map.of("controller", List.of(ProcessRoles.CONTROLLER), "broker", List.of(ProcessRoles.BROKER)), roles);
            // Node ids are Strimzi's to choose: nothing in the recipe names one (the agent's
            // limits apply to every log dir, whatever node holds it).
            for (KafkaNodePool pool : Recipe.ofKind(route, KafkaNodePool.class)) {
                Map<String, String> annotations = pool.getMetadata().getAnnotations();
                assertTrue(annotations == null || !annotations.containsKey("strimzi.io/next-node-ids"),
                        pool.getMetadata().getName());
            }
        }
    }

    private static Map<String, VolumeMount> mountsByPath(List<HasMetadata> route) {
        return kafka(route).getTemplate().getKafkaContainer().getVolumeMounts().stream()
                .collect(Collectors.toMap(VolumeMount::getMountPath, mount -> mount));
    }

    private static Map<String, AdditionalVolume> volumesByName(List<HasMetadata> route) {
        return kafka(route).getTemplate().getPod().getVolumes().stream()
                .collect(Collectors.toMap(AdditionalVolume::getName, volume -> volume));
    }

    private static List<String> split(String list) {
        return Arrays.stream(list.split(",")).map(String::strip).filter(entry -> !entry.isEmpty()).toList();
    }
}
