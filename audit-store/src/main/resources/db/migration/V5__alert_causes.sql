-- Each alert's root causes in words (RootCauses), a JSON array of strings, largest first: why the bytes moved,
-- named where the alert is read (CLI, API, the placement-alerts topic, Alertmanager) rather than dug out by hand.
ALTER TABLE alerts ADD COLUMN causes VARCHAR(65535);
