package dev.placementaudit.producer.cli;

import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;

/** A producer command run as a user types it, in this JVM: its exit code, what it printed and what it said went wrong. */
record CliRun(int exit, String out, String err) {
    static CliRun run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = ProducerCli.commandLine(null);
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        int exit = cli.execute(args);
        return new CliRun(exit, out.toString(), err.toString());
    }
}
