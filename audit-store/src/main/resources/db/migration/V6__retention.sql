-- Where a deployment's chain begins once its oldest entries were pruned (store prune): the last pruned entry's
-- position and hash, which the first remaining entry names as its previous hash. Also published to the chain topic,
-- so a prefix cut without it is still caught.
CREATE TABLE chain_anchors (
    deployment_id        VARCHAR(200) NOT NULL PRIMARY KEY,
    seq                  BIGINT       NOT NULL,
    entry_hash           VARCHAR(64)  NOT NULL,
    pruned_at            TIMESTAMP WITH TIME ZONE NOT NULL
);
