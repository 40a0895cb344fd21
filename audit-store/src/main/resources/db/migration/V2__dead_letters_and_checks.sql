-- Records the store could not project (undecodable, or refused by the database as content), one row each, written in
-- the same transaction as the batch they came in, so that a load missing a decision says why instead of staying
-- silently incomplete. The record itself is on the dead-letter topic, with the same reason in its headers.
CREATE TABLE dead_letters (
    source_topic         VARCHAR(249)  NOT NULL,
    source_partition     INTEGER       NOT NULL,
    source_offset        BIGINT        NOT NULL,
    load_id              VARCHAR(36),
    reason               VARCHAR(40)   NOT NULL,
    detail               VARCHAR(200)  NOT NULL,
    error                VARCHAR(2000) NOT NULL,
    dead_lettered_at     TIMESTAMP WITH TIME ZONE NOT NULL,
    PRIMARY KEY (source_topic, source_partition, source_offset)
);
CREATE INDEX dead_letters_by_load ON dead_letters (load_id);

-- Sizes are never negative: a decision that says otherwise is content the projection refuses (SQLSTATE 23514).
ALTER TABLE decisions ADD CONSTRAINT decisions_sizes_not_negative
    CHECK (element_count >= 0 AND stored_bytes >= 0 AND resident_bytes >= 0);
ALTER TABLE loads ADD CONSTRAINT loads_sizes_not_negative
    CHECK (tensor_count >= 0 AND stored_bytes >= 0 AND resident_bytes >= 0 AND heap_bytes >= 0 AND offheap_bytes >= 0 AND mapped_bytes >= 0);
