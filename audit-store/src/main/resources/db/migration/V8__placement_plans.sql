-- Placement plans (PlanDigest): a load's decisions minus what is load-specific, kept once however many loads share
-- them. A load names its plan; a load whose plan is already stored costs one row, not one per tensor.
CREATE TABLE plans (
    plan_digest          VARCHAR(64)  NOT NULL PRIMARY KEY,
    tensor_count         INTEGER      NOT NULL,
    -- SHA-256 over (tensor, domain) in tensor order, as loads.placement_signature.
    placement_signature  VARCHAR(64)  NOT NULL
);

-- One row per tensor of each plan: where it lands, and why.
CREATE TABLE plan_tensors (
    plan_digest          VARCHAR(64)   NOT NULL,
    tensor_index         INTEGER       NOT NULL,
    tensor_name          VARCHAR(1000) NOT NULL,
    dtype                VARCHAR(20)   NOT NULL,
    stored_encoding      VARCHAR(100)  NOT NULL,
    stored_format        VARCHAR(150)  NOT NULL,
    element_count        BIGINT        NOT NULL,
    stored_bytes         BIGINT        NOT NULL,
    size_estimated       BOOLEAN       NOT NULL,
    resident_format      VARCHAR(150)  NOT NULL,
    resident_bytes       BIGINT        NOT NULL,
    memory_domain        VARCHAR(20)   NOT NULL,
    scope_kind           VARCHAR(10)   NOT NULL,
    mapping_requested    BOOLEAN       NOT NULL,
    reason_code          VARCHAR(40)   NOT NULL,
    placement_reason     VARCHAR(40)   NOT NULL,
    mapping_blockers     VARCHAR(200)  NOT NULL,
    reason               VARCHAR(4000) NOT NULL,
    PRIMARY KEY (plan_digest, tensor_index),
    CONSTRAINT plan_tensors_sizes_not_negative CHECK (element_count >= 0 AND stored_bytes >= 0 AND resident_bytes >= 0)
);

-- The plan a load's decisions make; NULL until the load completes.
-- (Not indexed: only retention asks which loads name a plan, rarely; every load would pay for the index.)
ALTER TABLE loads ADD COLUMN plan_digest VARCHAR(64);

-- What a completed load was compared with (its predecessor: the latest complete load of another, earlier release of
-- its deployment and model), and that load's plan: the findings are those of the pair of plans (plan_findings).
ALTER TABLE loads ADD COLUMN previous_load_id VARCHAR(36);
ALTER TABLE loads ADD COLUMN previous_release VARCHAR(200);
ALTER TABLE loads ADD COLUMN previous_plan_digest VARCHAR(64);

-- What changes from one plan to another, stored once per pair of plans however many loads make that change.
CREATE TABLE plan_findings (
    from_plan            VARCHAR(64)   NOT NULL,
    to_plan              VARCHAR(64)   NOT NULL,
    seq                  INTEGER       NOT NULL,
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
    PRIMARY KEY (from_plan, to_plan, seq)
);

-- The latest complete load of each deployment, model and release, kept as loads complete, with what the fleet view
-- of a release shows of it: that view reads only these rows, so it costs the deployments it shows, not every load the
-- release ever had.
CREATE TABLE release_heads (
    deployment_id        VARCHAR(200) NOT NULL,
    model_id             VARCHAR(200) NOT NULL,
    release_name         VARCHAR(200) NOT NULL,
    load_id              VARCHAR(36)  NOT NULL,
    occurred_at          TIMESTAMP WITH TIME ZONE NOT NULL,
    platform_name        VARCHAR(100) NOT NULL,
    profile_name         VARCHAR(100) NOT NULL,
    heap_bytes           BIGINT       NOT NULL,
    offheap_bytes        BIGINT       NOT NULL,
    mapped_bytes         BIGINT       NOT NULL,
    plan_digest          VARCHAR(64),
    previous_plan_digest VARCHAR(64),
    PRIMARY KEY (deployment_id, model_id, release_name)
);
CREATE INDEX release_heads_by_release ON release_heads (release_name);

-- How an entry was hashed (HashChain): 1 over the load's decision rows (stores written before this version, whose
-- decision rows stay for it), 2 over its row and its plan's digest.
ALTER TABLE chain_entries ADD COLUMN encoding INTEGER DEFAULT 1 NOT NULL;

-- Every tensor of every load that has a plan, as the decisions table used to hold them: what queries read.
CREATE VIEW load_tensors AS
SELECT l.load_id, l.resolver_version, l.policy_digest, t.plan_digest, t.tensor_index, t.tensor_name, t.dtype, t.stored_encoding,
       t.stored_format, t.element_count, t.stored_bytes, t.size_estimated, t.resident_format, t.resident_bytes, t.memory_domain,
       t.scope_kind, t.mapping_requested, t.reason_code, t.placement_reason, t.mapping_blockers, t.reason
FROM loads l JOIN plan_tensors t ON t.plan_digest = l.plan_digest;
