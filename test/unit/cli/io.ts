import type { Io } from '../../../src/cli/io.js';

/** An Io whose output the test reads. */
export function capturedIo(color = false): Io & { stdout(): string; stderr(): string } {
  let out = '';
  let err = '';
  return {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    color,
    stdout: () => out,
    stderr: () => err,
  };
}
