-- The projection of the decision log. Portable between PostgreSQL 15 and H2 (PostgreSQL mode): standard types only.

-- One row per resolved load, from its LoadResolved; complete once all its decisions are stored too.
CREATE TABLE loads (
    load_id              VARCHAR(36)  NOT NULL PRIMARY KEY,
    deployment_id        VARCHAR(200) NOT NULL,
    cluster              VARCHAR(200) NOT NULL,
    host                 VARCHAR(200) NOT NULL,
    release_name         VARCHAR(200) NOT NULL,
    model_id             VARCHAR(200) NOT NULL,
    model_name           VARCHAR(500) NOT NULL,
    model_sha256         VARCHAR(64),
    platform_name        VARCHAR(100) NOT NULL,
    profile_name         VARCHAR(100) NOT NULL,
    occurred_at          TIMESTAMP WITH TIME ZONE NOT NULL,
    tensor_count         INTEGER      NOT NULL,
    stored_bytes         BIGINT       NOT NULL,
    resident_bytes       BIGINT       NOT NULL,
    heap_bytes           BIGINT       NOT NULL,
    offheap_bytes        BIGINT       NOT NULL,
    mapped_bytes         BIGINT       NOT NULL,
    heap_tensors         INTEGER      NOT NULL,
    offheap_tensors      INTEGER      NOT NULL,
    mapped_tensors       INTEGER      NOT NULL,
    resolver_version     VARCHAR(100) NOT NULL,
    policy_digest        VARCHAR(64)  NOT NULL,
    resolved_at          TIMESTAMP WITH TIME ZONE NOT NULL,
    complete             BOOLEAN      NOT NULL,
    completed_at         TIMESTAMP WITH TIME ZONE,
    -- SHA-256 over (tensor, domain) in tensor order: equal signatures placed every tensor alike.
    placement_signature  VARCHAR(64)
);
CREATE INDEX loads_history ON loads (deployment_id, model_id, complete, occurred_at);
CREATE INDEX loads_by_release ON loads (release_name, complete);

-- One row per tensor per load: where it landed, and why.
CREATE TABLE decisions (
    decision_id          VARCHAR(36)   NOT NULL PRIMARY KEY,
    load_id              VARCHAR(36)   NOT NULL,
    tensor_name          VARCHAR(1000) NOT NULL,
    tensor_index         INTEGER       NOT NULL,
    dtype                VARCHAR(20)   NOT NULL,
    stored_encoding      VARCHAR(100)  NOT NULL,
    stored_format        VARCHAR(150)  NOT NULL,
    element_count        BIGINT        NOT NULL,
    stored_bytes         BIGINT        NOT NULL,
    resident_format      VARCHAR(150)  NOT NULL,
    resident_bytes       BIGINT        NOT NULL,
    memory_domain        VARCHAR(20)   NOT NULL,
    scope_kind           VARCHAR(10)   NOT NULL,
    mapping_requested    BOOLEAN       NOT NULL,
    reason_code          VARCHAR(40)   NOT NULL,
    placement_reason     VARCHAR(40)   NOT NULL,
    mapping_blockers     VARCHAR(200)  NOT NULL,
    reason               VARCHAR(4000) NOT NULL,
    resolver_version     VARCHAR(100)  NOT NULL,
    policy_digest        VARCHAR(64)   NOT NULL,
    source_partition     INTEGER       NOT NULL,
    source_offset        BIGINT        NOT NULL
);
CREATE INDEX decisions_by_load ON decisions (load_id, resolver_version, tensor_index);

-- Where ingestion stands, committed in the same transaction as the rows it produced.
CREATE TABLE ingest_offsets (
    consumer_group       VARCHAR(200) NOT NULL,
    topic                VARCHAR(249) NOT NULL,
    partition_id         INTEGER      NOT NULL,
    next_offset          BIGINT       NOT NULL,
    PRIMARY KEY (consumer_group, topic, partition_id)
);

-- What changed between a completed load and the latest completed load of the previous release.
CREATE TABLE findings (
    finding_id           VARCHAR(36)   NOT NULL PRIMARY KEY,
    load_id              VARCHAR(36)   NOT NULL,
    previous_load_id     VARCHAR(36)   NOT NULL,
    deployment_id        VARCHAR(200)  NOT NULL,
    model_id             VARCHAR(200)  NOT NULL,
    from_release         VARCHAR(200)  NOT NULL,
    to_release           VARCHAR(200)  NOT NULL,
    kind                 VARCHAR(30)   NOT NULL,
    tensor_name          VARCHAR(1000),
    before_domain        VARCHAR(20),
    after_domain         VARCHAR(20),
    before_bytes         BIGINT        NOT NULL,
    after_bytes          BIGINT        NOT NULL,
    before_format        VARCHAR(150),
    after_format         VARCHAR(150),
    before_reason        VARCHAR(4000),
    after_reason         VARCHAR(4000),
    detected_at          TIMESTAMP WITH TIME ZONE NOT NULL
);
CREATE INDEX findings_by_load ON findings (load_id);
CREATE INDEX findings_by_deployment ON findings (deployment_id, to_release);

-- Alerts, written with the findings (an outbox): published to Kafka after commit, never lost, never twice.
CREATE TABLE alerts (
    alert_id             VARCHAR(36)   NOT NULL PRIMARY KEY,
    kind                 VARCHAR(30)   NOT NULL,
    deployment_id        VARCHAR(200)  NOT NULL,
    model_id             VARCHAR(200)  NOT NULL,
    from_release         VARCHAR(200),
    to_release           VARCHAR(200)  NOT NULL,
    from_load_id         VARCHAR(36),
    to_load_id           VARCHAR(36)   NOT NULL,
    before_bytes         BIGINT        NOT NULL,
    after_bytes          BIGINT        NOT NULL,
    delta_bytes          BIGINT        NOT NULL,
    rule_text            VARCHAR(500)  NOT NULL,
    threshold_percent    DOUBLE PRECISION,
    threshold_bytes      BIGINT,
    top_tensors          VARCHAR(65535) NOT NULL,
    detected_at          TIMESTAMP WITH TIME ZONE NOT NULL,
    suppressed_by        VARCHAR(500),
    published_at         TIMESTAMP WITH TIME ZONE
);
CREATE INDEX alerts_unpublished ON alerts (published_at, suppressed_by);
CREATE INDEX alerts_by_deployment ON alerts (deployment_id, to_release);

-- Growth a deployment's release is expected to bring: within it, no alert (max_delta_bytes NULL acknowledges any).
CREATE TABLE growth_budgets (
    deployment_id        VARCHAR(200) NOT NULL,
    release_name         VARCHAR(200) NOT NULL,
    kind                 VARCHAR(30)  NOT NULL,
    max_delta_bytes      BIGINT,
    note                 VARCHAR(1000) NOT NULL,
    created_at           TIMESTAMP WITH TIME ZONE NOT NULL,
    PRIMARY KEY (deployment_id, release_name, kind)
);
