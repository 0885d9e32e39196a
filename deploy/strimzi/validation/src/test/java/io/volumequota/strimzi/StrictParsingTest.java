package io.volumequota.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.strimzi.api.kafka.model.kafka.Kafka;
import io.strimzi.api.kafka.model.nodepool.KafkaNodePool;
import io.strimzi.api.kafka.model.topic.KafkaTopic;
import io.strimzi.api.kafka.model.user.KafkaUser;
import io.volumequota.strimzi.StrimziYaml.StrictParseException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

/** Every document of the recipe fits Strimzi's model, and the strict parser can fail. */
class StrictParsingTest {

    @Test
    void everyRecipeDocumentParsesIntoStrimzisModel() {
        Map<Path, Map<String, Long>> kindsPerFile = Map.of(
                Recipe.KAFKA, Map.of("Kafka", 1L, "KafkaNodePool", 2L),
                Recipe.KAFKA_IMAGE_VOLUME, Map.of("Kafka", 1L, "KafkaNodePool", 2L),
                Recipe.TOPICS, Map.of("KafkaTopic", 4L),
                Recipe.USERS, Map.of("KafkaUser", 3L));
        kindsPerFile.forEach((file, expected) -> {
            List<HasMetadata> resources = StrimziYaml.load(file);
            Map<String, Long> kinds = resources.stream()
                    .collect(Collectors.groupingBy(HasMetadata::getKind, Collectors.counting()));
            assertEquals(expected, kinds, file.toString());
            for (HasMetadata resource : resources) {
                assertEquals("kafka", resource.getMetadata().getNamespace(), file + " namespace");
                if (!(resource instanceof Kafka)) {  // the others name their cluster
                    assertEquals(Recipe.CLUSTER,
                            resource.getMetadata().getLabels().get("strimzi.io/cluster"),
                            file + " " + resource.getMetadata().getName() + " strimzi.io/cluster");
                }
            }
        });
        assertEquals(Recipe.CLUSTER, Recipe.ofKind(StrimziYaml.load(Recipe.KAFKA), Kafka.class)
                .get(0).getMetadata().getName());
    }

    @Test
    void aMisspeltPropertyFailsThoughJacksonAloneWouldAcceptIt() throws IOException {
        // The first document: the controller pool.
        String misspelt = Files.readString(Recipe.KAFKA)
                .replaceFirst("kraftMetadata: shared", "kraftMetadat: shared");

        // Jackson with FAIL_ON_UNKNOWN_PROPERTIES alone: Strimzi's @JsonAnySetter swallows it.
        ObjectMapper lenient = new YAMLMapper()
                .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
        String firstPool = misspelt.split("\n---\n")[0];
        KafkaNodePool pool = lenient.readValue(firstPool, KafkaNodePool.class);
        assertFalse(StrimziYaml.unknownProperties(pool).isEmpty(), "kept aside, not rejected");

        StrictParseException error = assertThrows(StrictParseException.class,
                () -> StrimziYaml.parseAll(misspelt));
        assertTrue(error.getMessage().contains("spec.storage.volumes[0].kraftMetadat"),
                error.getMessage());
    }

    @Test
    void aMisspeltKubernetesFieldInsideATemplateFails() throws IOException {
        String misspelt = replaceOnce(Files.readString(Recipe.KAFKA),
                "mountPath: /mnt/volume-quota/cluster-ca", "mountPth: /mnt/volume-quota/cluster-ca");
        StrictParseException error = assertThrows(StrictParseException.class,
                () -> StrimziYaml.parseAll(misspelt));
        assertTrue(error.getMessage().contains("kafkaContainer.volumeMounts[1].mountPth"),
                error.getMessage());
    }

    @Test
    void anUnknownAclOperationOrTopicPropertyFails() throws IOException {
        String users = Files.readString(Recipe.USERS);
        String reed = users.replace("operations: [Read, Describe]", "operations: [Reed, Describe]");
        StrictParseException unknownOperation = assertThrows(StrictParseException.class,
                () -> StrimziYaml.parseAll(reed));
        assertTrue(unknownOperation.getMessage().contains("operations[0] (not a known value)"),
                unknownOperation.getMessage());

        String topics = replaceOnce(Files.readString(Recipe.TOPICS),
                "topicName: __volume_quota_decisions", "topicname: __volume_quota_decisions");
        StrictParseException error = assertThrows(StrictParseException.class,
                () -> StrimziYaml.parseAll(topics));
        assertTrue(error.getMessage().contains("topicname"), error.getMessage());
    }

    @Test
    void anOlderApiVersionOrAnotherKindIsRefused() throws IOException {
        String topics = Files.readString(Recipe.TOPICS);
        assertThrows(StrictParseException.class, () -> StrimziYaml.parseAll(
                topics.replace("kafka.strimzi.io/v1\n", "kafka.strimzi.io/v1beta2\n")));
        assertThrows(StrictParseException.class, () -> StrimziYaml.parseAll(
                "apiVersion: kafka.strimzi.io/v1\nkind: KafkaTopics\nmetadata: {name: x}\n"));
    }

    @Test
    void theParsedKindsAreStrimzisClasses() {
        assertEquals(KafkaTopic.class, StrimziYaml.KINDS.get("KafkaTopic"));
        assertEquals(KafkaUser.class, StrimziYaml.KINDS.get("KafkaUser"));
        assertTrue(Kafka.VERSIONS.contains("v1"), "Strimzi's Kafka model serves v1: " + Kafka.VERSIONS);
    }

    static String replaceOnce(String text, String target, String replacement) {
        int at = text.indexOf(target);
        if (at < 0 || text.indexOf(target, at + 1) >= 0) {
            throw new AssertionError("expected '" + target + "' exactly once");
        }
        return text.substring(0, at) + replacement + text.substring(at + target.length());
    }
}
