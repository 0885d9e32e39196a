package io.volumequota.strimzi;

import io.fabric8.kubernetes.api.model.HasMetadata;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** The recipe's files (deploy/strimzi/), found from the module directory. */
final class Recipe {
    static final Path DIRECTORY = locate();
    static final Path KAFKA = DIRECTORY.resolve("kafka.yaml");
    static final Path KAFKA_IMAGE_VOLUME = DIRECTORY.resolve("kafka-image-volume.yaml");
    static final Path TOPICS = DIRECTORY.resolve("topics.yaml");
    static final Path USERS = DIRECTORY.resolve("user.yaml");

    static final String CLUSTER = "my-cluster";
    static final String SNAPSHOTS = "__volume_quota_snapshots";
    static final String DECISIONS = "__volume_quota_decisions";
    static final String OVERRIDES = "__volume_quota_overrides";
    static final String USAGE = "__volume_quota_usage";

    private Recipe() {
    }

    private static Path locate() {
        Path here = Path.of("").toAbsolutePath();
        for (Path candidate = here; candidate != null; candidate = candidate.getParent()) {
            if (Files.isRegularFile(candidate.resolve("kafka.yaml"))
                    && Files.isDirectory(candidate.resolve("validation"))) {
                return candidate;
            }
        }
        throw new IllegalStateException("deploy/strimzi not found above " + here);
    }

    static <T extends HasMetadata> List<T> ofKind(List<HasMetadata> resources, Class<T> type) {
        return resources.stream().filter(type::isInstance).map(type::cast).toList();
    }

    static <T extends HasMetadata> T named(List<HasMetadata> resources, Class<T> type, String name) {
        List<T> matches = ofKind(resources, type).stream()
                .filter(resource -> resource.getMetadata().getName().equals(name))
                .toList();
        if (matches.size() != 1) {
            throw new AssertionError("expected one " + type.getSimpleName() + " " + name
                    + ", found " + matches.size());
        }
        return matches.get(0);
    }
}
