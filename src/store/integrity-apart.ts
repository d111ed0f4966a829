import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { STORE_CHECK_TIMEOUT_MS } from '../registry/defaults.js';
import type { IntegrityFault } from './integrity.js';

/**
 * Runs the store's check at open (integrity.ts) in a process of its own. Over a damaged page,
 * LMDB or the decompression under lmdb-js can do worse than throw: read through a garbled
 * pointer and corrupt the heap, and the process that reads aborts ("corrupted double-linked
 * list"). That process must not be flotilla: here a crash of the check is one more fault found,
 * and the store is set aside and rebuilt like any other damaged one.
 */

/** What the checking process prints on its standard output: the fault, or null for a whole store. */
export interface CheckReport {
  fault: IntegrityFault | null;
}

/**
 * The compiled entry of the checking process (integrity-check-main.js beside this file), or
 * undefined when this module runs from its TypeScript sources (under a test runner), where there
 * is nothing for a bare Node process to run.
 */
export function checkerScript(): string | undefined {
  const script = fileURLToPath(new URL('./integrity-check-main.js', import.meta.url));
  return existsSync(script) ? script : undefined;
}

/** The last line a process wrote on its standard error: what it said as it died. */
function lastLine(text: string): string {
  return text.trim().split('\n').pop()?.trim() ?? '';
}

/** Checks the store at `path` in a child process running `script`; a crash or a hang is a fault. */
export function verifyStoreApart(path: string, script: string, timeoutMs = STORE_CHECK_TIMEOUT_MS): IntegrityFault | undefined {
  const run = spawnSync(process.execPath, [script, path], { encoding: 'utf8', timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 1024 ** 2 });
  const said = lastLine(run.stderr ?? '');
  if (run.error && (run.error as NodeJS.ErrnoException).code === 'ETIMEDOUT') return `reading the store took longer than ${Math.round(timeoutMs / 1000)} s`;
  if (run.error) throw run.error;
  if (run.signal) return `reading the store crashed the check (${run.signal}${said ? `: ${said}` : ''})`;
  if (run.status !== 0) return `the check of the store failed (exit ${run.status}${said ? `: ${said}` : ''})`;
  try {
    const report = JSON.parse(run.stdout) as CheckReport;
    return report.fault ?? undefined;
  } catch {
    return `the check of the store gave no answer (${JSON.stringify(run.stdout.slice(0, 200))})`;
  }
}
