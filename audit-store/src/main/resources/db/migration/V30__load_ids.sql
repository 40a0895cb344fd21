-- Every stored load's id, once, with its time (docs/adr/0025-load-ids-beside-the-months.md). Since V27 the primary key
-- of load_rows holds the time, as PostgreSQL requires of a partitioned table, so it no longer makes a load id unique,
-- and a lookup by id alone probes every month's index. Here the id is unique again (two store instances meeting one
-- id with other content at the same moment: one insert fails, and the batch's retry finds the first and dead-letters
-- the other), and a lookup by id finds its time first, which takes it to one month. Written in the transaction that
-- writes the load's row; deleted with it.
CREATE TABLE load_ids (
    load_id              VARCHAR(36)   NOT NULL PRIMARY KEY,
    occurred_at          TIMESTAMP WITH TIME ZONE NOT NULL
);
INSERT INTO load_ids (load_id, occurred_at) SELECT load_id, MIN(occurred_at) FROM load_rows GROUP BY load_id;
