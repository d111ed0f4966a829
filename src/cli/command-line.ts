import { Command, CommanderError } from 'commander';
import { CliError, EXIT_FAILED, EXIT_OK, EXIT_USAGE, type Io } from './io.js';

/**
 * What `flotilla` and `kubectl flotilla` share: commander set to write through an Io and to throw
 * rather than exit, and one reading of a command line into an exit code.
 */
export interface CommandLine {
  program: Command;
  /** What the command run resolved with: its exit code, or undefined to keep running (serve). */
  outcome: { code: number | undefined };
  /** Called by each command's action with its outcome. */
  finish(code: number | undefined): void;
}

export function newCommandLine(name: string, io: Io): CommandLine {
  const outcome: CommandLine['outcome'] = { code: EXIT_OK };
  const program = new Command(name)
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .showHelpAfterError(`(${name} --help for usage)`)
    .helpCommand(false);
  return { program, outcome, finish: (code) => void (outcome.code = code) };
}

/** Commander's outcomes that are not errors: help and version asked for. */
const HELP_CODES = new Set(['commander.helpDisplayed', 'commander.help', 'commander.version']);

/**
 * Runs one command line (without `node` and the script): resolves with the exit code, or
 * undefined when the command keeps the process (flotilla serving). A call gone wrong (an unknown
 * flag, a missing argument, flags that contradict) is 2, as flotilla's flags always were; a
 * command that failed is 1, its reason on stderr.
 */
export async function runCommandLine({ program, outcome }: CommandLine, args: readonly string[], io: Io): Promise<number | undefined> {
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) return HELP_CODES.has(e.code) ? EXIT_OK : EXIT_USAGE;
    if (e instanceof CliError) {
      io.err(`${program.name()}: ${e.message}\n`);
      return EXIT_FAILED;
    }
    throw e;
  }
  return outcome.code;
}
