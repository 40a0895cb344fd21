-- Findings are stored once per pair of plans (plan_findings, V8; V9 moved those stored before): a load's findings are
-- those of its predecessor's plan and its own. This view shows them per load, with the columns the table had.
DROP TABLE findings;
CREATE VIEW findings AS
SELECT l.load_id || '/' || CAST(f.seq AS VARCHAR(10)) AS finding_id, l.load_id, l.previous_load_id, l.deployment_id, l.model_id,
       l.previous_release AS from_release, l.release_name AS to_release, f.kind, f.tensor_name, f.before_domain, f.after_domain,
       f.before_bytes, f.after_bytes, f.before_format, f.after_format, f.before_reason, f.after_reason, l.completed_at AS detected_at
FROM loads l JOIN plan_findings f ON f.from_plan = l.previous_plan_digest AND f.to_plan = l.plan_digest;
