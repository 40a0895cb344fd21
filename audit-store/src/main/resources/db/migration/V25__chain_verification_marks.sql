-- Where the last store verify found each chain to agree with a head published to the log (issue 55): the next verify
-- starts after it, when the log still says the same. Written by store verify, never by ingest.
CREATE TABLE chain_verifications (
    deployment_id VARCHAR(200) NOT NULL PRIMARY KEY,
    seq BIGINT NOT NULL,
    load_id VARCHAR(36) NOT NULL,
    entry_hash VARCHAR(64) NOT NULL,
    verified_at TIMESTAMP WITH TIME ZONE NOT NULL
);
