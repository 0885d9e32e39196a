package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.kafka.common.config.ConfigDef;
import org.junit.jupiter.api.Test;

/**
 * The settings table of docs/broker-plugin.md is the one {@link VolumeQuotaConfig#CONFIG}
 * renders: one source of truth. On a difference, the table to paste is in
 * {@code target/settings-table.md}.
 */
class SettingsTableTest {

    static final String BEGIN = "<!-- settings table: generated from VolumeQuotaConfig.CONFIG, checked by SettingsTableTest -->";
    static final String END = "<!-- end of settings table -->";
    private static final Path DOCS = Path.of("../../docs/broker-plugin.md");
    private static final Path GENERATED = Path.of("target/settings-table.md");

    /** The Markdown table of every setting, in the order of the definition. */
    static String markdown(ConfigDef definition) {
        StringBuilder table = new StringBuilder("| key | default | valid values | meaning |\n|---|---|---|---|\n");
        for (ConfigDef.ConfigKey key : definition.configKeys().values()) {
            row(table, "`" + key.name + "`", defaultOf(key), String.valueOf(key.validator == null ? "text"
                    : key.validator), key.documentation);
            if (key.name.equals(VolumeQuotaConfig.DECISION_TOPIC)) {
                row(table, "`" + VolumeQuotaConfig.CONSUMER_PREFIX + "*`", "none", "Kafka consumer properties",
                        VolumeQuotaSettings.CONSUMER_PREFIX_DOC);
            }
        }
        return table.toString();
    }

    private static void row(StringBuilder table, String... cells) {
        for (String cell : cells) {
            assertFalse(cell.contains("|") || cell.contains("\n"), () -> "breaks the table: " + cell);
        }
        table.append("| ").append(String.join(" | ", cells)).append(" |\n");
    }

    private static String defaultOf(ConfigDef.ConfigKey key) {
        if (!key.hasDefault()) {
            return "required";
        }
        Object value = key.defaultValue;
        if (value == null) {
            return "none";
        }
        if (value instanceof Double number && number == Math.rint(number)) {
            value = number.longValue();
        }
        return value.toString().isEmpty() ? "empty" : "`" + value + "`";
    }

    /** The table between the markers of the document. */
    static String documented(String document) {
        int begin = document.indexOf(BEGIN);
        int end = document.indexOf(END);
        assertTrue(begin >= 0 && end > begin, "docs/broker-plugin.md lacks the markers " + BEGIN + " ... " + END);
        return document.substring(begin + BEGIN.length(), end).strip() + "\n";
    }

    @Test
    void theDocumentedTableIsTheGeneratedOne() throws IOException {
        String generated = markdown(VolumeQuotaConfig.CONFIG);
        Files.createDirectories(GENERATED.getParent());
        Files.writeString(GENERATED, generated);
        assertEquals(generated, documented(Files.readString(DOCS)),
                "docs/broker-plugin.md: paste " + GENERATED.toAbsolutePath() + " between the markers");
    }

    @Test
    void everyVolumeQuotaKeyOfTheCallbackIsDefined() {
        for (String key : new String[] {VolumeQuotaConfig.DECISION_SOURCE, VolumeQuotaConfig.DECISION_PATH,
                VolumeQuotaConfig.BASE_BYTES_PER_SECOND, VolumeQuotaConfig.PAUSE_BROKER_CEILING,
                VolumeQuotaConfig.THROTTLE_FACTOR_STEP, VolumeQuotaConfig.DECISION_REBUILD_AFTER_MS}) {
            assertTrue(VolumeQuotaConfig.CONFIG.names().contains(key), key);
        }
        assertEquals(20, VolumeQuotaConfig.CONFIG.names().size(), VolumeQuotaConfig.CONFIG.names().toString());
    }

    @Test
    void aDocumentWithAnotherTableDiffers() {
        String document = "x\n" + BEGIN + "\n| key |\n" + END + "\n";
        assertEquals("| key |\n", documented(document));
        assertFalse(markdown(VolumeQuotaConfig.CONFIG).equals(documented(document)));
    }
}
