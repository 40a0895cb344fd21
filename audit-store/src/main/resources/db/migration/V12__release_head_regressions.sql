-- How many regressions each release head's comparison found (findings of kind LOST_MAPPING, OFFHEAP_GROWTH or
-- HEAP_GROWTH for its pair of plans), kept as heads move: the fleet view of a release then reads its heads alone,
-- with no join and no count over every pair of plans on each call.
ALTER TABLE release_heads ADD COLUMN regressions INTEGER DEFAULT 0 NOT NULL;
UPDATE release_heads SET regressions = (SELECT COUNT(*) FROM plan_findings f WHERE f.from_plan = release_heads.previous_plan_digest
    AND f.to_plan = release_heads.plan_digest AND f.kind IN ('LOST_MAPPING', 'OFFHEAP_GROWTH', 'HEAP_GROWTH'));
