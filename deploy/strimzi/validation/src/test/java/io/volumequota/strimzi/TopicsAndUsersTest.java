package io.volumequota.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.strimzi.api.kafka.model.kafka.Kafka;
import io.strimzi.api.kafka.model.topic.KafkaTopic;
import io.strimzi.api.kafka.model.user.KafkaUser;
import io.strimzi.api.kafka.model.user.KafkaUserAuthorizationSimple;
import io.strimzi.api.kafka.model.user.KafkaUserTlsClientAuthentication;
import io.strimzi.api.kafka.model.user.acl.AclResourcePatternType;
import io.strimzi.api.kafka.model.user.acl.AclRule;
import io.strimzi.api.kafka.model.user.acl.AclRuleClusterResource;
import io.strimzi.api.kafka.model.user.acl.AclRuleGroupResource;
import io.strimzi.api.kafka.model.user.acl.AclRuleTopicResource;
import io.strimzi.api.kafka.model.user.acl.AclRuleType;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

/** The topics are compacted with the agreed configs; each user has exactly the ACLs it needs. */
class TopicsAndUsersTest {
    private static final List<HasMetadata> TOPICS = StrimziYaml.load(Recipe.TOPICS);
    private static final List<HasMetadata> USERS = StrimziYaml.load(Recipe.USERS);
    /** What Kubernetes accepts as metadata.name: a DNS-1123 subdomain. */
    private static final Pattern KUBERNETES_NAME =
            Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");

    private static Map<String, KafkaTopic> topicsByKafkaName() {
        return Recipe.ofKind(TOPICS, KafkaTopic.class).stream()
                .collect(Collectors.toMap(topic -> topic.getSpec().getTopicName(), topic -> topic));
    }

    private static Map<String, String> config(KafkaTopic topic) {
        Map<String, String> config = new HashMap<>();
        topic.getSpec().getConfig().forEach((key, value) -> config.put(key, String.valueOf(value)));
        return config;
    }

    @Test
    void eachTopicNameIsCarriedBySpecTopicNameBecauseUnderscoresAreNoKubernetesName() {
        Map<String, KafkaTopic> topics = topicsByKafkaName();
        assertEquals(Set.of(Recipe.SNAPSHOTS, Recipe.DECISIONS, Recipe.OVERRIDES, Recipe.USAGE), topics.keySet());
        topics.forEach((name, topic) -> {
            assertTrue(!KUBERNETES_NAME.matcher(name).matches(), name + " is no Kubernetes name");
            assertTrue(KUBERNETES_NAME.matcher(topic.getMetadata().getName()).matches(),
                    topic.getMetadata().getName());
            assertEquals(3, topic.getSpec().getReplicas(), name);
        });
    }

    @Test
    void theSnapshotTopicIsCompactedWithTheAgreedLagAndSegments() {
        assertEquals(Map.of(
                "cleanup.policy", "compact",
                "min.compaction.lag.ms", "86400000",
                "segment.ms", "3600000",
                "delete.retention.ms", "86400000",
                "min.insync.replicas", "2",
                "max.message.bytes", "1081344"), config(topicsByKafkaName().get(Recipe.SNAPSHOTS)));
    }

    @Test
    void theDecisionsAndOverridesTopicsAreCompactedWithOnePartition() {
        for (String name : List.of(Recipe.DECISIONS, Recipe.OVERRIDES, Recipe.SNAPSHOTS, Recipe.USAGE)) {
            KafkaTopic topic = topicsByKafkaName().get(name);
            assertEquals("compact", config(topic).get("cleanup.policy"), name + ": exactly compact");
            assertEquals(1, topic.getSpec().getPartitions(), name);
        }
        String decisionTopic = String.valueOf(Recipe.named(StrimziYaml.load(Recipe.KAFKA), Kafka.class, Recipe.CLUSTER)
                .getSpec().getKafka().getConfig().get("volume.quota.decision.topic"));
        assertTrue(topicsByKafkaName().containsKey(decisionTopic), "the callback reads a managed topic");
    }

    /** One ACL as "type:name:operation", the form the tests compare. */
    private static Set<String> acls(String user) {
        KafkaUser kafkaUser = Recipe.named(USERS, KafkaUser.class, user);
        assertTrue(kafkaUser.getSpec().getAuthentication() instanceof KafkaUserTlsClientAuthentication,
                user + ": TLS, so the principal is User:CN=" + user);
        KafkaUserAuthorizationSimple authorization = (KafkaUserAuthorizationSimple) kafkaUser.getSpec().getAuthorization();
        Set<String> acls = new HashSet<>();
        for (AclRule rule : authorization.getAcls()) {
            assertEquals(AclRuleType.ALLOW, rule.getType(), "allow rules only (the default)");
            assertNull(rule.getOperation(), "v1 has `operations` only");
            assertEquals("*", rule.getHost(), "any host (the default)");
            String resource;
            if (rule.getResource() instanceof AclRuleTopicResource topic) {
                assertEquals(AclResourcePatternType.LITERAL, topic.getPatternType(), topic.getName());
                resource = "topic:" + topic.getName();
            } else if (rule.getResource() instanceof AclRuleGroupResource group) {
                assertEquals(AclResourcePatternType.LITERAL, group.getPatternType(), group.getName());
                resource = "group:" + group.getName();
            } else if (rule.getResource() instanceof AclRuleClusterResource) {
                resource = "cluster";
            } else {
                throw new AssertionError(user + ": unexpected resource " + rule.getResource());
            }
            rule.getOperations().forEach(operation -> {
                assertTrue(acls.add(resource + ":" + operation.toValue()), "duplicate " + resource + operation);
            });
        }
        return acls;
    }

    @Test
    void theAgentHasExactlyTheAclsItNeeds() {
        assertEquals(Set.of(
                "topic:__volume_quota_snapshots:Read",
                "topic:__volume_quota_snapshots:Write",
                "topic:__volume_quota_snapshots:Create",
                "topic:__volume_quota_snapshots:Describe",
                "topic:__volume_quota_snapshots:DescribeConfigs",
                "topic:__volume_quota_decisions:Write",
                "topic:__volume_quota_decisions:Create",
                "topic:__volume_quota_decisions:Describe",
                "topic:__volume_quota_decisions:DescribeConfigs",
                "topic:__volume_quota_overrides:Read",
                "topic:__volume_quota_overrides:Describe",
                "topic:__volume_quota_usage:Read",
                "topic:__volume_quota_usage:Write",
                "topic:__volume_quota_usage:Create",
                "topic:__volume_quota_usage:Describe",
                "topic:__volume_quota_usage:DescribeConfigs",
                "topic:*:DescribeConfigs",
                "group:volume-quota-consumer:Read",
                "cluster:Describe"), acls("volume-quota-agent"));
    }

    @Test
    void theCallbackConsumerOnlyReadsTheDecisions() {
        assertEquals(Set.of(
                "topic:__volume_quota_decisions:Read",
                "topic:__volume_quota_decisions:Describe"), acls("volume-quota-callback"));
    }

    @Test
    void theOperatorsMayOnlyWriteOverrides() {
        assertEquals(Set.of(
                "topic:__volume_quota_overrides:Write",
                "topic:__volume_quota_overrides:Describe",
                "topic:__volume_quota_overrides:DescribeConfigs"), acls("volume-quota-operator"));
    }

    @Test
    void theCallbacksUserSecretIsTheOneKafkaYamlMounts() {
        Set<String> users = Recipe.ofKind(USERS, KafkaUser.class).stream()
                .map(user -> user.getMetadata().getName()).collect(Collectors.toSet());
        assertEquals(Set.of("volume-quota-agent", "volume-quota-callback", "volume-quota-operator"), users);
        Set<String> mountedSecrets = Recipe.named(StrimziYaml.load(Recipe.KAFKA), Kafka.class, Recipe.CLUSTER)
                .getSpec().getKafka().getTemplate().getPod().getVolumes().stream()
                .filter(volume -> volume.getSecret() != null)
                .map(volume -> volume.getSecret().getSecretName()).collect(Collectors.toSet());
        assertEquals(Set.of("volume-quota-callback", "my-cluster-cluster-ca-cert"), mountedSecrets);
    }
}
