-- placement-audit's store on Citus: docs/scale-out.md. NOT RUN: Citus is not on this project's machines.
-- Run on the coordinator, on a store migrated to the latest version, with the store stopped.
-- 1. Keys that include the distribution column (Citus enforces only those).
ALTER TABLE load_rows DROP CONSTRAINT loads_pkey, ADD CONSTRAINT loads_pkey PRIMARY KEY (deployment_id, load_id);
ALTER TABLE load_observations DROP CONSTRAINT load_observations_pkey,
    ADD CONSTRAINT load_observations_pkey PRIMARY KEY (deployment_id, load_id);
ALTER TABLE incident_deployments DROP CONSTRAINT incident_deployments_pkey,
    ADD CONSTRAINT incident_deployments_pkey PRIMARY KEY (deployment_id, incident_id);
-- decisions, load_divergences, runtime_findings and alerts first need a deployment_id column, filled from
-- load_rows by load_id, and a key that begins with it; the store's writers then name it in their conflict targets.

-- 2. Shared, small, rarely written: a copy on every node.
SELECT create_reference_table('plans');
SELECT create_reference_table('plan_tensor_arrays');
SELECT create_reference_table('plan_findings');
SELECT create_reference_table('load_sites');
SELECT create_reference_table('load_builds');
SELECT create_reference_table('alert_texts');
SELECT create_reference_table('incidents');
SELECT create_reference_table('incident_acks');
SELECT create_reference_table('ingest_offsets');
SELECT create_reference_table('dead_letters');

-- 3. Everything of a deployment, on the node of its loads.
SELECT create_distributed_table('load_rows', 'deployment_id');
SELECT create_distributed_table('deployment_locks', 'deployment_id', colocate_with => 'load_rows');
SELECT create_distributed_table('chain_entries', 'deployment_id', colocate_with => 'load_rows');
SELECT create_distributed_table('chain_anchors', 'deployment_id', colocate_with => 'load_rows');
SELECT create_distributed_table('load_observations', 'deployment_id', colocate_with => 'load_rows');
SELECT create_distributed_table('incident_deployments', 'deployment_id', colocate_with => 'load_rows');
SELECT create_distributed_table('growth_budgets', 'deployment_id', colocate_with => 'load_rows');
