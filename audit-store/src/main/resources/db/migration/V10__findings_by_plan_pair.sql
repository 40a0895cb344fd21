-- Findings are stored once per pair of plans (plan_findings, V8; V9 moved those stored before): a load's findings are
-- those of its predecessor's plan and its own. This view shows them per load, with the columns the table had.
DROP TABLE findings;
CREATE VIEW findings AS
SELECT l.load_id || '/' || CAST(f.seq AS VARCHAR(10)) AS finding_id, l.load_id, l.previous_load_id, l.deployment_id, l.model_id,
       l.previous_release AS from_release, l.release_name AS to_release, f.kind, f.tensor_name, f.before_domain, f.after_domain,
       f.before_bytes, f.after_bytes, f.before_format, f.after_format, f.before_reason, f.after_reason, l.completed_at AS detected_at
FROM loads l JOIN plan_findings f ON f.from_plan = l.previous_plan_digest AND f.to_plan = l.plan_digest;

-- The release heads of loads stored before them.
INSERT INTO release_heads (deployment_id, model_id, release_name, load_id, occurred_at, platform_name, profile_name, heap_bytes, offheap_bytes, mapped_bytes, plan_digest, previous_plan_digest)
SELECT l.deployment_id, l.model_id, l.release_name, l.load_id, l.occurred_at, l.platform_name, l.profile_name, l.heap_bytes, l.offheap_bytes, l.mapped_bytes, l.plan_digest, l.previous_plan_digest FROM loads l
WHERE l.complete = TRUE AND NOT EXISTS (SELECT 1 FROM loads x WHERE x.complete = TRUE AND x.deployment_id = l.deployment_id
    AND x.model_id = l.model_id AND x.release_name = l.release_name
    AND (x.occurred_at > l.occurred_at OR (x.occurred_at = l.occurred_at AND x.load_id > l.load_id)));
