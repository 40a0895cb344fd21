-- One row per deployment, locked (SELECT ... FOR UPDATE) by the transaction that checks its loads for completion,
-- compares them and chains them. Several store instances can ingest one load's decisions and its summary in
-- concurrent transactions; without this, each could miss the other's uncommitted rows and the load would never
-- complete (write skew). With it, the second waits for the first to commit, then sees its rows: exactly one of them
-- completes the load, compares it and chains it, in log order.
CREATE TABLE deployment_locks (
    deployment_id        VARCHAR(200) NOT NULL PRIMARY KEY
);
