-- Where each load's summary stands in the log: the chain orders a batch's completions by it, so a rebuild from the
-- log writes the same chain. NULL for loads stored before this version (they are not chained: rebuild to chain them).
ALTER TABLE loads ADD COLUMN summary_partition INTEGER;
ALTER TABLE loads ADD COLUMN summary_offset BIGINT;

-- The tamper-evident chain (HashChain): one entry per completed load, chained per deployment,
-- entry_hash = SHA-256(prev_hash || load_hash || decisions_hash), written in the same transaction as the completion.
CREATE TABLE chain_entries (
    deployment_id        VARCHAR(200) NOT NULL,
    seq                  BIGINT       NOT NULL,
    load_id              VARCHAR(36)  NOT NULL,
    prev_hash            VARCHAR(64)  NOT NULL,
    load_hash            VARCHAR(64)  NOT NULL,
    decisions_hash       VARCHAR(64)  NOT NULL,
    entry_hash           VARCHAR(64)  NOT NULL,
    PRIMARY KEY (deployment_id, seq)
);
CREATE UNIQUE INDEX chain_entries_by_load ON chain_entries (load_id);
