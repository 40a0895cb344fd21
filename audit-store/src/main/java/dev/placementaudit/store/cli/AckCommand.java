package dev.placementaudit.store.cli;

import dev.placementaudit.store.cli.AuditStoreCli.Common;
import dev.placementaudit.store.db.AuditDatabase;
import dev.placementaudit.store.incidents.Incidents;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.sql.Connection;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

@Command(name = "ack", mixinStandardHelpOptions = true,
        description = "Acknowledge an incident's cause as expected fleet-wide: it pages nobody and the release gate lets it pass.")
final class AckCommand implements Callable<Integer> {
    @Mixin Common common = new Common();
    @Parameters(paramLabel = "INCIDENT", description = "the incident's id, or enough of its start to name one") String id;
    @Option(names = "--note", required = true, description = "why it is expected, e.g. a ticket") String note;
    @Option(names = "--until", paramLabel = "TIME", description = "when the acknowledgement runs out (ISO-8601, e.g. 2026-12-31T00:00:00Z); "
            + "default: until acknowledged again") Instant until;
    @Option(names = "--by", description = "who acknowledges (default: the user running the command, ${DEFAULT-VALUE})",
            defaultValue = "${sys:user.name}") String by;

    @Override
    public Integer call() throws Exception {
        Instant now = Instant.now();
        if (until != null && !until.isAfter(now)) {
            throw common.usage("--until " + until + " is not in the future");
        }
        try (AuditDatabase db = common.open(); Connection c = db.dataSource().getConnection()) {
            Incidents.Incident i = IncidentCommand.find(c, id).incident();
            Incidents.acknowledge(c, db.dialect().upsert("incident_acks", List.of("incident_id", "acknowledged_by", "acknowledged_at", "note",
                    "until_time"), List.of("VARCHAR(40)", "VARCHAR(200)", "TIMESTAMP WITH TIME ZONE", "VARCHAR(2000)", "TIMESTAMP WITH TIME ZONE"),
                    List.of("incident_id")), i.incidentId(), by, note, until, now);
            common.out().printf(Locale.ROOT, "%s acknowledged by %s%s: %s (%s %s -> %s: %s)%n", i.incidentId(), by,
                    until == null ? "" : " until " + until, note, i.modelId(), i.fromRelease(), i.toRelease(), i.cause());
        }
        return 0;
    }
}
