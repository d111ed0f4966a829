import { chmodSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { findProjectRoot } from '../fleet/fleet.js';

/**
 * `flotilla` and `kubectl-flotilla` (the built files) in a directory of their own, as `npm i -g`
 * puts them on PATH: prepend the directory returned to PATH, and kubectl finds the plugin itself.
 */
export function commandsOnPath(dir: string): string {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const root = findProjectRoot();
  for (const [name, file] of [['flotilla', 'main.js'], ['kubectl-flotilla', join('cli', 'kubectl-plugin.js')]] as const) {
    const target = join(root, 'dist', 'src', file);
    chmodSync(target, 0o755);
    symlinkSync(target, join(dir, name));
  }
  return dir;
}
