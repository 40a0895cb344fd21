-- What the runtime itself did (docs/observations.md): the decisions it reports per tensor where they differ from the
-- reference (LoadResolved.divergences), what it measured it held after a load (LoadObserved), and the findings the
-- two give, per load. Every row is a function of the log: a rebuild writes the same, whichever arrives first.

-- One per observed load, the first observation of it in the log; it may arrive before its load (it then waits).
CREATE TABLE load_observations (
    load_id              VARCHAR(36)   NOT NULL PRIMARY KEY,
    deployment_id        VARCHAR(200)  NOT NULL,
    observed_at          TIMESTAMP WITH TIME ZONE NOT NULL,
    method               VARCHAR(200)  NOT NULL,
    heap_before          BIGINT,
    heap_after           BIGINT,
    direct_before        BIGINT,
    direct_after         BIGINT,
    mapped_before        BIGINT,
    mapped_after         BIGINT,
    file_mapped          BIGINT,
    file_resident        BIGINT,
    anon_rss_delta       BIGINT,
    tensors_reported     INTEGER       NOT NULL,
    source_partition     INTEGER       NOT NULL,
    source_offset        BIGINT        NOT NULL
);

-- Each tensor a runtime placed otherwise than the reference: both sides, and the reference's reason.
CREATE TABLE load_divergences (
    load_id              VARCHAR(36)   NOT NULL,
    tensor_index         INTEGER       NOT NULL,
    tensor_name          VARCHAR(1000) NOT NULL,
    runtime_domain       VARCHAR(20)   NOT NULL,
    runtime_bytes        BIGINT        NOT NULL,
    reference_domain     VARCHAR(20)   NOT NULL,
    reference_bytes      BIGINT        NOT NULL,
    reference_reason_code VARCHAR(40)  NOT NULL,
    reference_reason     VARCHAR(2000) NOT NULL,
    PRIMARY KEY (load_id, tensor_index)
);

-- A complete load's runtime findings (DIVERGED, UNPLANNED_OFFHEAP, MAPPING_NOT_OBSERVED), each naming the incident
-- its cause belongs to; a deployment's incident rows for these kinds are derived from these and the load order.
CREATE TABLE runtime_findings (
    load_id              VARCHAR(36)   NOT NULL,
    incident_id          VARCHAR(40)   NOT NULL,
    kind                 VARCHAR(30)   NOT NULL,
    deployment_id        VARCHAR(200)  NOT NULL,
    model_id             VARCHAR(200)  NOT NULL,
    bytes_moved          BIGINT        NOT NULL,
    offheap_delta        BIGINT        NOT NULL,
    heap_delta           BIGINT        NOT NULL,
    mapped_delta         BIGINT        NOT NULL,
    PRIMARY KEY (load_id, incident_id)
);
CREATE INDEX runtime_findings_by_deployment ON runtime_findings (deployment_id, model_id);
