package dev.placementaudit.store.cli;

import dev.placementaudit.service.cli.CommandFailure;
import dev.placementaudit.store.config.StoreConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What --store names, and that a name it cannot find is an error listing what was tried, never a new store. */
class StoreLocationTest {
    @TempDir
    Path dir;

    @AfterEach
    void forgetTheDistributionHome() {
        System.clearProperty("app.home");
    }

    @Test
    void aJdbcUrlIsTakenAsItIs() {
        assertThat(StoreLocation.settings("jdbc:postgresql://db/audit")).isEqualTo(Map.of("store.jdbc.url", "jdbc:postgresql://db/audit"));
    }

    @Test
    void anExistingH2FileIsOpenedWithTheStoresH2Settings() throws Exception {
        Files.createFile(dir.resolve("audit.mv.db"));
        String expected = StoreConfig.h2Url(dir.resolve("audit").toAbsolutePath().normalize().toString());

        assertThat(StoreLocation.settings(dir.resolve("audit").toString())).containsEntry("store.jdbc.url", expected);
        assertThat(StoreLocation.settings(dir.resolve("audit.mv.db").toString())).containsEntry("store.jdbc.url", expected);
    }

    @Test
    void aNameIsAStoreDefinitionInTheDistributionsConf() throws Exception {
        Files.createDirectories(dir.resolve("conf/stores"));
        Files.writeString(dir.resolve("conf/stores/prod.properties"), "store.jdbc.url=jdbc:postgresql://db/audit\nstore.jdbc.user=reader\n");
        System.setProperty("app.home", dir.toString());

        assertThat(StoreLocation.settings("prod")).containsEntry("store.jdbc.url", "jdbc:postgresql://db/audit").containsEntry("store.jdbc.user", "reader");
    }

    @Test
    void somethingItCannotFindListsWhatWasTried() {
        System.setProperty("app.home", dir.toString());

        assertThatThrownBy(() -> StoreLocation.settings("staging")).isInstanceOf(CommandFailure.class)
                .hasMessageContaining("no audit store 'staging'").hasMessageContaining("staging.mv.db")
                .hasMessageContaining(dir.resolve("conf/stores/staging.properties").toString());
        assertThat(dir.resolve("staging.mv.db")).doesNotExist();
    }
}
