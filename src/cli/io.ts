/**
 * Where a command writes, and whether it may colour what it writes: a TTY gets colour, a pipe or a
 * file never does (nor anything when NO_COLOR is set). Commands take an Io so tests can read them.
 */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  color: boolean;
}

export function processIo(env: NodeJS.ProcessEnv = process.env): Io {
  return {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    color: Boolean(process.stdout.isTTY) && !env.NO_COLOR,
  };
}

/** A command's exit code: 0 done, 1 it failed, 2 it was called wrongly (as flotilla's flags always were). */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** A command that cannot do its work, for a reason the user can act on: printed as one line, exit 1. */
export class CliError extends Error {}
