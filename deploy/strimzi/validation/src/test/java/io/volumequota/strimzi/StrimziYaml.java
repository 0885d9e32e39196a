package io.volumequota.strimzi;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.strimzi.api.kafka.model.kafka.Kafka;
import io.strimzi.api.kafka.model.nodepool.KafkaNodePool;
import io.strimzi.api.kafka.model.topic.KafkaTopic;
import io.strimzi.api.kafka.model.user.KafkaUser;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Parses the recipe's YAML into Strimzi's own model classes (io.strimzi:api), strictly.
 *
 * <p>Jackson's FAIL_ON_UNKNOWN_PROPERTIES alone is not enough: Strimzi's model classes (and
 * fabric8's, which it embeds: ObjectMeta, VolumeMount, ...) keep unknown properties in an
 * {@code additionalProperties} map through {@code @JsonAnySetter}, so a misspelt key parses
 * without an error. {@link #parse} therefore also walks the parsed object graph and fails on
 * every non-empty {@code getAdditionalProperties()}, naming its path. Strimzi's enums read an
 * unknown value (an ACL operation "Reed") as null, without an error: a null in a list fails too,
 * and single enum properties are checked by the tests that read them.
 */
final class StrimziYaml {
    static final String API_VERSION = "kafka.strimzi.io/v1";

    static final Map<String, Class<? extends HasMetadata>> KINDS = Map.of(
            "Kafka", Kafka.class,
            "KafkaNodePool", KafkaNodePool.class,
            "KafkaTopic", KafkaTopic.class,
            "KafkaUser", KafkaUser.class);

    private static final YAMLMapper TREE_READER = new YAMLMapper();

    private static final ObjectMapper STRICT = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
            .build();

    private StrimziYaml() {
    }

    /** Every document of a recipe file, parsed into its kind's model class. */
    static List<HasMetadata> load(Path file) {
        try {
            return parseAll(Files.readString(file));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<HasMetadata> parseAll(String yaml) {
        List<HasMetadata> resources = new ArrayList<>();
        try (var parser = new YAMLFactory().createParser(yaml)) {
            for (JsonNode document : TREE_READER.readValues(parser, JsonNode.class).readAll()) {
                if (document != null && !document.isNull() && !document.isMissingNode()) {
                    resources.add(parse(document));
                }
            }
        } catch (IOException e) {
            throw new StrictParseException("not YAML: " + e.getMessage(), e);
        }
        return resources;
    }

    static HasMetadata parse(JsonNode document) {
        String kind = document.path("kind").asText();
        Class<? extends HasMetadata> type = KINDS.get(kind);
        if (type == null) {
            throw new StrictParseException("no Strimzi model for kind '" + kind + "'", null);
        }
        if (!API_VERSION.equals(document.path("apiVersion").asText())) {
            throw new StrictParseException(kind + ": apiVersion must be " + API_VERSION
                    + ", found '" + document.path("apiVersion").asText() + "'", null);
        }
        HasMetadata resource;
        try {
            resource = STRICT.treeToValue(document, type);
        } catch (JsonProcessingException e) {
            throw new StrictParseException(kind + ": " + e.getOriginalMessage(), e);
        }
        List<String> unknown = unknownProperties(resource);
        if (!unknown.isEmpty()) {
            throw new StrictParseException(kind + " " + resource.getMetadata().getName()
                    + ": unknown properties " + unknown, null);
        }
        return resource;
    }

    /** Paths of every property the model did not know, e.g. {@code spec.storage.volumes[0].siz}. */
    static List<String> unknownProperties(Object root) {
        List<String> found = new ArrayList<>();
        walk(root, "", found, Collections.newSetFromMap(new IdentityHashMap<>()));
        return found;
    }

    private static void walk(Object value, String path, List<String> found, Set<Object> seen) {
        if (value == null || !seen.add(value)) {
            return;
        }
        if (value instanceof List<?> list) {
            for (int i = 0; i < list.size(); i++) {
                if (list.get(i) == null) {
                    // Strimzi's enums (ACL operations, ...) read an unknown value as null.
                    found.add(path + "[" + i + "] (not a known value)");
                }
                walk(list.get(i), path + "[" + i + "]", found, seen);
            }
            return;
        }
        if (value instanceof Map<?, ?> map) {
            // Free-form maps (spec.kafka.config, labels): their keys are data, not properties;
            // only model objects inside them are walked.
            map.forEach((key, item) -> walk(item, path + "[" + key + "]", found, seen));
            return;
        }
        if (!isModel(value.getClass())) {
            return;
        }
        for (Method getter : value.getClass().getMethods()) {
            if (!isGetter(getter)) {
                continue;
            }
            Object property;
            try {
                property = getter.invoke(value);
            } catch (IllegalAccessException | InvocationTargetException e) {
                continue;
            }
            if (getter.getName().equals("getAdditionalProperties")) {
                if (property instanceof Map<?, ?> extra && !extra.isEmpty()) {
                    extra.keySet().forEach(key -> found.add(join(path, String.valueOf(key))));
                }
                continue;
            }
            walk(property, join(path, propertyName(getter)), found, seen);
        }
    }

    private static boolean isModel(Class<?> type) {
        String name = type.getName();
        return name.startsWith("io.strimzi.api.") || name.startsWith("io.fabric8.kubernetes.api.model.");
    }

    private static boolean isGetter(Method method) {
        return method.getParameterCount() == 0
                && !Modifier.isStatic(method.getModifiers())
                && method.getName().startsWith("get")
                && !method.getName().equals("getClass")
                && method.getReturnType() != void.class;
    }

    private static String propertyName(Method getter) {
        String name = getter.getName().substring(3);
        return name.isEmpty() ? name : Character.toLowerCase(name.charAt(0)) + name.substring(1);
    }

    private static String join(String path, String name) {
        return path.isEmpty() ? name : path + "." + name;
    }

    /** The recipe does not fit Strimzi's model. */
    static final class StrictParseException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        StrictParseException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
