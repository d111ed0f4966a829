import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * flotilla's version, from the package.json it ships in: found by walking up from this module,
 * which runs from src/cli (tests) and dist/src/cli (the package) alike.
 */
export function flotillaVersion(from = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'flotilla' && pkg.version) return pkg.version;
    } catch {
      // no package.json here: look further up
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}

export function versionText(): string {
  return `flotilla ${flotillaVersion()}\nnode ${process.version}\n`;
}
