package dev.placementaudit.store.db;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class FilterTest {
    @Test
    void keepsOnlyTheConditionsGivenWithTheirParametersInOrder() {
        Filter filter = new Filter().when(true, "state = 'OPEN'").equal("release_name", null).equal("model_id", "llama").when(false, "x = 1")
                .equal("deployment_id", "d-1");

        assertThat(filter.where()).isEqualTo(" WHERE state = 'OPEN' AND model_id = ? AND deployment_id = ?");
        assertThat(filter.args()).containsExactly("llama", "d-1");
    }

    @Test
    void noFilterGivenIsNoWhereClause() {
        Filter filter = new Filter().equal("release_name", null).when(false, "state = 'OPEN'");

        assertThat(filter.where()).isEmpty();
        assertThat(filter.args()).isEmpty();
    }
}
