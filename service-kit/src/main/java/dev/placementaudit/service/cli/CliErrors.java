package dev.placementaudit.service.cli;

import dev.placementaudit.service.ConfigException;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.NoSuchFileException;

/**
 * How every command reports a failure: one line on stderr starting with {@code error:}, exit code 2 for what the user
 * can fix (configuration, connection, input) and 1 for anything else; the stack trace only with {@code --verbose}.
 */
public final class CliErrors implements CommandLine.IExecutionExceptionHandler {
    public static final String VERBOSE = "--verbose";

    @Override
    public int handleExecutionException(Exception e, CommandLine commandLine, CommandLine.ParseResult parsed) {
        PrintWriter err = commandLine.getErr();
        err.println("error: " + message(e));
        if (verbose(parsed)) {
            e.printStackTrace(err);
        } else if (exitCode(e) != CommandFailure.USAGE) {
            err.println("(run again with " + VERBOSE + " for the stack trace)");
        }
        err.flush();
        return exitCode(e);
    }

    /**
     * Installs this handler, the {@value #VERBOSE} option on every command, and one for bad usage that prints the problem, picocli's nearest match for an unknown
     * option or command, and where the help is, instead of the whole usage text.
     */
    public static CommandLine install(CommandLine cli) {
        addVerbose(cli);
        cli.setExecutionExceptionHandler(new CliErrors());
        cli.setParameterExceptionHandler(CliErrors::handleParameterException);
        return cli;
    }

    /** {@value #VERBOSE} on this command and every subcommand that does not declare it itself. */
    private static void addVerbose(CommandLine cli) {
        if (cli.getCommandSpec().findOption(VERBOSE) == null) {
            cli.getCommandSpec().addOption(CommandLine.Model.OptionSpec.builder(VERBOSE).description("print the stack trace of a failure").build());
        }
        cli.getSubcommands().values().forEach(CliErrors::addVerbose);
    }

    static int handleParameterException(CommandLine.ParameterException problem, String[] args) {
        CommandLine command = problem.getCommandLine();
        // picocli checks required options before it reports unknown ones, so "--modle x" would read "missing --model":
        // the misspelling is the more useful thing to name.
        CommandLine.ParameterException e = problem instanceof CommandLine.MissingParameterException && !command.getUnmatchedArguments().isEmpty()
                ? new CommandLine.UnmatchedArgumentException(command, command.getUnmatchedArguments()) : problem;
        PrintWriter err = command.getErr();
        err.println("error: " + e.getMessage());
        CommandLine.UnmatchedArgumentException.printSuggestions(e, err);
        err.println("Try '" + command.getCommandSpec().qualifiedName() + " --help' for more information.");
        err.flush();
        return CommandFailure.USAGE;
    }

    static int exitCode(Throwable e) {
        if (e instanceof CommandFailure failure) {
            return failure.exitCode();
        }
        if (e instanceof ConfigException || e instanceof IllegalArgumentException || e instanceof UncheckedIOException
                || e instanceof CommandLine.ParameterException) {
            return CommandFailure.USAGE;
        }
        return 1;
    }

    static String message(Throwable e) {
        if (e instanceof UncheckedIOException io && io.getCause() instanceof NoSuchFileException missing) {
            return (e.getMessage() == null ? "" : e.getMessage() + ": ") + "no such file " + missing.getFile();
        }
        String message = e.getMessage();
        return message == null || message.isBlank() ? e.getClass().getSimpleName() : message;
    }

    private static boolean verbose(CommandLine.ParseResult parsed) {
        for (CommandLine.ParseResult p = parsed; p != null; p = p.subcommand()) {
            if (p.hasMatchedOption(VERBOSE)) {
                return true;
            }
        }
        return false;
    }
}
