package dev.placementaudit.service.cli;

import picocli.CommandLine;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * A command's subcommands, made only when needed: picocli builds a command's model by reflection over its
 * annotations, about 15 ms a subcommand in a cold JVM, so {@code store where} builds {@code where} alone. With no
 * subcommand named, or one it does not know, it builds them all: for {@code --help}'s list and for picocli's
 * suggestion of the nearest name.
 */
public final class Subcommands {
    private final Map<String, Supplier<Object>> commands = new LinkedHashMap<>();

    /** Adds a subcommand under its name, in the order {@code --help} lists them. */
    public Subcommands with(String name, Supplier<Object> command) {
        commands.put(name, command);
        return this;
    }

    /** Whether there is a subcommand of this name. */
    public boolean has(String name) {
        return commands.containsKey(name);
    }

    /**
     * @param named the subcommand the arguments name (the first argument after the parent's name), or null
     * @return the parent, with the named subcommand only when there is one of that name, else with every one
     */
    public CommandLine addTo(CommandLine parent, String named) {
        boolean one = named != null && has(named);
        commands.forEach((name, command) -> {
            if (!one || name.equals(named)) {
                parent.addSubcommand(name, command.get());
            }
        });
        return parent;
    }

    /** The root command with its subcommands (see {@link #addTo}) and the project's one-line errors ({@link CliErrors}). */
    public CommandLine commandLine(Object root, String named) {
        return CliErrors.install(addTo(new CommandLine(root), named));
    }

    /** The first argument, the subcommand's name when there is one. */
    public static String named(String[] args) {
        return args.length > 0 ? args[0] : null;
    }
}
