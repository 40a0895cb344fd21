-- Incidents: one row per cause across the fleet (docs/incidents.md). A regression is a property of a plan transition,
-- not of a load: its id is a fingerprint of the model, the release transition and the root cause (RootCauses' group:
-- domains, reasons and blockers, resident formats, before and after, and a digest of the group's tensor names), so
-- every deployment and every load that shows the cause lands on the same row, whichever store instance ingests it.
CREATE TABLE incidents (
    incident_id          VARCHAR(40)   NOT NULL PRIMARY KEY,
    model_id             VARCHAR(200)  NOT NULL,
    from_release         VARCHAR(200)  NOT NULL,
    to_release           VARCHAR(200)  NOT NULL,
    primary_kind         VARCHAR(30)   NOT NULL,
    kinds                VARCHAR(200)  NOT NULL,
    cause                VARCHAR(2000) NOT NULL,
    before_domain        VARCHAR(20),
    after_domain         VARCHAR(20),
    before_reason        VARCHAR(500),
    after_reason         VARCHAR(500),
    before_format        VARCHAR(150),
    after_format         VARCHAR(150),
    tensor_count         INTEGER       NOT NULL,
    tensors_digest       VARCHAR(64)   NOT NULL,
    tensors              VARCHAR(65535) NOT NULL,
    -- OPEN while at least one deployment's latest load of the model shows the cause, RESOLVED once none does.
    state                VARCHAR(10)   NOT NULL,
    -- Derived from the loads that showed it (their occurred_at), so a rebuild from the log writes the same.
    first_seen           TIMESTAMP WITH TIME ZONE NOT NULL,
    last_seen            TIMESTAMP WITH TIME ZONE NOT NULL,
    -- Bumped on every change of its deployments; what the publisher compares with what it last published.
    version              BIGINT        NOT NULL,
    updated_at           TIMESTAMP WITH TIME ZONE NOT NULL,
    -- The outbox: what was last published to placement-alerts (a PlacementIncident, keyed by incident_id), and the
    -- lease an instance holds while publishing (as for alerts).
    published_version    BIGINT,
    published_state      VARCHAR(10),
    published_at         TIMESTAMP WITH TIME ZONE,
    claimed_by           VARCHAR(36),
    claimed_until        TIMESTAMP WITH TIME ZONE
);
CREATE INDEX incidents_by_release ON incidents (to_release, model_id);
CREATE INDEX incidents_open ON incidents (state);

-- Each deployment that showed an incident: whether its latest load of the model still does, how many of its loads
-- did, the bytes its latest showing load moved, and when (load times).
CREATE TABLE incident_deployments (
    incident_id          VARCHAR(40)   NOT NULL,
    deployment_id        VARCHAR(200)  NOT NULL,
    model_id             VARCHAR(200)  NOT NULL,
    showing              BOOLEAN       NOT NULL,
    loads                INTEGER       NOT NULL,
    bytes_moved          BIGINT        NOT NULL,
    offheap_delta        BIGINT        NOT NULL,
    heap_delta           BIGINT        NOT NULL,
    mapped_delta         BIGINT        NOT NULL,
    first_seen           TIMESTAMP WITH TIME ZONE NOT NULL,
    last_seen            TIMESTAMP WITH TIME ZONE NOT NULL,
    -- When it left: the time of the load that no longer showed the cause (null while showing).
    left_seen            TIMESTAMP WITH TIME ZONE,
    last_load_id         VARCHAR(36)   NOT NULL,
    from_plan            VARCHAR(64),
    to_plan              VARCHAR(64),
    PRIMARY KEY (incident_id, deployment_id)
);
CREATE INDEX incident_deployments_showing ON incident_deployments (deployment_id, model_id, showing);

-- A cause acknowledged as expected fleet-wide (a budget for the cause, not the deployment): it pages nobody and the
-- release gate lets it pass, until `until` if set. Operator input, not log: a rebuild copies it, like growth budgets.
CREATE TABLE incident_acks (
    incident_id          VARCHAR(40)   NOT NULL PRIMARY KEY,
    acknowledged_by      VARCHAR(200)  NOT NULL,
    acknowledged_at      TIMESTAMP WITH TIME ZONE NOT NULL,
    note                 VARCHAR(2000) NOT NULL,
    until_time           TIMESTAMP WITH TIME ZONE
);
