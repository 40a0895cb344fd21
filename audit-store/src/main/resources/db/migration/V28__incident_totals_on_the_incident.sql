-- Each incident's totals over its deployments, kept on its row (issue 55): the incidents list and the release gate read
-- them for every incident they show; summed from incident_deployments on each read, they cost a thousand rows an
-- incident of a large fleet (507 ms p99 for the dashboard's list at 3.1 million loads, bench/run.sh store --grow).
-- Written where the incident's state is settled (IncidentLedger.settle), from the same rows, in the same transaction.
ALTER TABLE incidents ADD COLUMN showing_deployments INTEGER DEFAULT 0 NOT NULL;
ALTER TABLE incidents ADD COLUMN affected_deployments INTEGER DEFAULT 0 NOT NULL;
ALTER TABLE incidents ADD COLUMN affected_loads BIGINT DEFAULT 0 NOT NULL;
ALTER TABLE incidents ADD COLUMN showing_bytes_moved BIGINT DEFAULT 0 NOT NULL;
ALTER TABLE incidents ADD COLUMN showing_offheap_delta BIGINT DEFAULT 0 NOT NULL;
UPDATE incidents SET
    showing_deployments = (SELECT COALESCE(SUM(CASE WHEN d.showing THEN 1 ELSE 0 END), 0) FROM incident_deployments d WHERE d.incident_id = incidents.incident_id),
    affected_deployments = (SELECT COUNT(*) FROM incident_deployments d WHERE d.incident_id = incidents.incident_id),
    affected_loads = (SELECT COALESCE(SUM(d.loads), 0) FROM incident_deployments d WHERE d.incident_id = incidents.incident_id),
    showing_bytes_moved = (SELECT COALESCE(SUM(CASE WHEN d.showing THEN d.bytes_moved ELSE 0 END), 0) FROM incident_deployments d
                           WHERE d.incident_id = incidents.incident_id),
    showing_offheap_delta = (SELECT COALESCE(SUM(CASE WHEN d.showing THEN d.offheap_delta ELSE 0 END), 0) FROM incident_deployments d
                             WHERE d.incident_id = incidents.incident_id);
