package dev.placementaudit.store.query;

import dev.placementaudit.store.incidents.Incidents;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/** What {@code store incidents}, {@code store incident} and the dashboard's incidents read. */
public final class IncidentQueries {
    private final DataSource database;

    IncidentQueries(DataSource database) {
        this.database = database;
    }

    /** Incidents, open ones first, then the most recently seen (see {@link Incidents#list}); at most {@code limit}. */
    public List<Incidents.Incident> incidents(boolean openOnly, String release, String model, int limit) throws SQLException {
        try (Connection c = database.getConnection()) {
            return Incidents.list(c, openOnly, release, model, limit);
        }
    }

    /**
     * One incident by id or unique prefix, with its tensors and deployments.
     *
     * @throws IllegalArgumentException when the prefix names several
     */
    public Optional<Incidents.Detail> incident(String idOrPrefix) throws SQLException {
        try (Connection c = database.getConnection()) {
            return Incidents.find(c, idOrPrefix);
        }
    }

}
