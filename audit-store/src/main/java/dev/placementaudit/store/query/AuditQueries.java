package dev.placementaudit.store.query;

import dev.placementaudit.store.incidents.Incidents;
import dev.placementaudit.store.plans.PlanCache;
import dev.placementaudit.store.regression.GrowthRule;

import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The read side, shared by the HTTP API, the CLI and the metrics, one part per view: loads ({@link LoadQueries}: where,
 * a load, a tensor's history), diffs ({@link DiffQueries}), the fleet ({@link FleetQueries}), per-load alerts
 * ({@link AlertQueries}) and incidents ({@link IncidentQueries}), each with its own records. Parameterised SQL only;
 * inputs arrive validated. The methods here are the views' own, for callers that hold the whole read side.
 */
public final class AuditQueries {
    private final LoadQueries loads;
    private final DiffQueries diffs;
    private final FleetQueries fleet;
    private final AlertQueries alerts;
    private final IncidentQueries incidents;

    public AuditQueries(DataSource database, GrowthRule offHeap, GrowthRule heap) {
        // Plans read, by digest: a plan never changes, so the API reads each once while it is in use.
        PlanCache plans = new PlanCache(64);
        this.loads = new LoadQueries(database);
        this.diffs = new DiffQueries(database, offHeap, heap, plans);
        this.fleet = new FleetQueries(database);
        this.alerts = new AlertQueries(database, plans);
        this.incidents = new IncidentQueries(database);
    }

    /** Loads, newest first; every filter optional. */
    public List<LoadQueries.LoadSummary> loads(String deployment, String model, String release, int limit) throws SQLException {
        return loads.loads(deployment, model, release, limit);
    }

    /** Where every tensor of one load landed. */
    public Optional<LoadQueries.LoadDetail> load(String loadId) throws SQLException {
        return loads.load(loadId);
    }

    /** Releases with a complete load, in the order they first appeared. */
    public List<String> releases() throws SQLException {
        return loads.releases();
    }

    /** Where one tensor of a deployment's model landed in each complete load, oldest first. */
    public List<LoadQueries.TensorHistoryRow> tensorHistory(String deployment, String model, String tensor, int limit) throws SQLException {
        return loads.tensorHistory(deployment, model, tensor, limit);
    }

    /** The latest complete load of each release, compared tensor by tensor. */
    public Optional<DiffQueries.DiffReport> diff(String deployment, String model, String fromRelease, String toRelease) throws SQLException {
        return diffs.diff(deployment, model, fromRelease, toRelease);
    }

    /** The same, each side of the runtime build its prefix names when one is given. */
    public Optional<DiffQueries.DiffReport> diff(String deployment, String model, String fromRelease, String toRelease, String fromRuntime,
                                                 String toRuntime) throws SQLException {
        return diffs.diff(deployment, model, fromRelease, toRelease, fromRuntime, toRuntime);
    }

    /** One release across the fleet. */
    public FleetQueries.FleetReport fleet(String release) throws SQLException {
        return fleet.fleet(release);
    }

    public long alertCount() throws SQLException {
        return alerts.alertCount();
    }

    public List<AlertQueries.AlertRow> alerts(String deployment, int limit) throws SQLException {
        return alerts.alerts(deployment, limit);
    }

    /** Incidents, open ones first, then the most recently seen; at most {@code limit}. */
    public List<Incidents.Incident> incidents(boolean openOnly, String release, String model, int limit) throws SQLException {
        return incidents.incidents(openOnly, release, model, limit);
    }

    /** One incident by id or unique prefix, with its tensors and deployments. */
    public Optional<Incidents.Detail> incident(String idOrPrefix) throws SQLException {
        return incidents.incident(idOrPrefix);
    }
}
