-- What an alert says of its causes (its top tensors and its causes, as JSON) depends on its two plans alone, so it is
-- stored once per distinct text and named by its digest (the first 32 hex characters of its SHA-256): at the fleet
-- mix the two JSON columns were two thirds of every alert row (about 560 of 860 bytes), the same few texts repeated
-- across thousands of alerts. Alerts written before keep their own text; readers take the alert's, else its text's.
-- Texts are not pruned with alerts: there is one per pair of plans and memory domain, and another instance may be
-- writing an alert that names one at the time.
CREATE TABLE alert_texts (
    text_id              VARCHAR(32)    NOT NULL PRIMARY KEY,
    top_tensors          VARCHAR(65535) NOT NULL,
    causes               VARCHAR(65535) NOT NULL
);
ALTER TABLE alerts ADD COLUMN text_id VARCHAR(32);
ALTER TABLE alerts ALTER COLUMN top_tensors DROP NOT NULL;

-- A release head's previous plan is its load's (loads.previous_plan_digest); nothing read it from the head but the
-- count of regressions, which the head keeps. 65 bytes a head, and every load of a fleet that reloads rarely is one.
ALTER TABLE release_heads DROP COLUMN previous_plan_digest;
