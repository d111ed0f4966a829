import { afterAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { numericOwner, parseDockerfile, runStages } from '../support/dockerfile.js';

/**
 * deploy/Dockerfile's install steps, carried out: both stages' WORKDIR/ENV/COPY/RUN in a scratch
 * directory (npm from the local cache where it can), then the runtime stage's entrypoint, as the
 * image's user when this runs as root. No container engine is needed, and the steps cannot rot.
 */
const root = resolve(import.meta.dirname, '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'flotilla-dockerfile-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('deploy/Dockerfile steps', () => {
  it('build and install in a scratch directory, and the runtime stage’s entrypoint runs', () => {
    chmodSync(scratch, 0o755); // the image's user must reach the runtime stage's files
    const parsed = parseDockerfile(readFileSync(resolve(root, 'deploy', 'Dockerfile'), 'utf8'));
    const results = runStages(parsed, root, scratch, { npm_config_prefer_offline: 'true', npm_config_update_notifier: 'false' });
    const runtime = results.at(-1)!;
    const app = join(runtime.root, runtime.workdir);

    // The compiled server, production dependencies only.
    expect(existsSync(join(app, 'dist', 'src', 'main.js'))).toBe(true);
    expect(existsSync(join(app, 'dist', 'test'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', 'fastify'))).toBe(true);
    for (const dev of ['typescript', 'vitest', 'eslint']) expect(existsSync(join(app, 'node_modules', dev)), dev).toBe(false);

    const entrypoint = parsed.stages.at(-1)!.steps.filter((s) => s.keyword === 'ENTRYPOINT').at(-1)!.json!;
    const asUser = process.getuid?.() === 0 && runtime.user ? numericOwner(runtime.user) : undefined;
    const ids = asUser ? { uid: asUser[0], gid: asUser[1] } : {};
    const env = { PATH: process.env.PATH ?? '', ...runtime.env };
    const help = spawnSync(entrypoint[0]!, [...entrypoint.slice(1), '--help'], { cwd: app, env, encoding: 'utf8', ...ids });
    expect(help.stdout).toMatch(/^Usage: flotilla /);
    expect(help.status).toBe(0);

    if (asUser) {
      // The cache directory is the user's; the code is not (a read-only root file system loses nothing).
      const cacheDir = join(runtime.root, 'var', 'lib', 'flotilla');
      const write = (dir: string) => spawnSync('node', ['-e', `require('node:fs').writeFileSync(${JSON.stringify(join(dir, 'probe'))}, 'x')`], { env, ...ids }).status;
      expect(write(cacheDir)).toBe(0);
      expect(write(app)).not.toBe(0);
    }
  }, 240_000);
});
