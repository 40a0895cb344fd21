package dev.placementaudit.store;

import dev.placementaudit.store.cli.AuditStoreCli;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;

/** A {@code store} command run in this JVM as a user would type it, against a harness's broker and database. */
record CliRun(int exit, String out, String err) {

    /** The harness's settings as {@code --set key=value} arguments. */
    static String[] settings(StoreHarness h) {
        List<String> args = new ArrayList<>();
        h.settings().forEach((key, value) -> {
            args.add("--set");
            args.add(key + "=" + value);
        });
        return args.toArray(String[]::new);
    }

    static CliRun run(String[] settings, String command, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = AuditStoreCli.commandLine(null);
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        List<String> all = new ArrayList<>(List.of(command));
        all.addAll(List.of(settings));
        all.addAll(List.of(args));
        int exit = cli.execute(all.toArray(String[]::new));
        return new CliRun(exit, out.toString(), err.toString());
    }
}
