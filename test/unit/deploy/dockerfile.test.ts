import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { validate, ValidationSeverity } from 'dockerfile-utils';
import type { ValidatorSettings } from 'dockerfile-utils';
import { absolutePathIn, numericOwner, parseDockerfile } from '../../support/dockerfile.js';

/** deploy/Dockerfile: the linter's diagnostics (every one of them an error here) and our own rules. */
const root = resolve(import.meta.dirname, '..', '..', '..');
const text = readFileSync(resolve(root, 'deploy', 'Dockerfile'), 'utf8');
const parsed = parseDockerfile(text);
const build = parsed.stages[0]!;
const runtime = parsed.stages.at(-1)!;

const strict: ValidatorSettings = {
  deprecatedMaintainer: ValidationSeverity.ERROR,
  directiveCasing: ValidationSeverity.ERROR,
  emptyContinuationLine: ValidationSeverity.ERROR,
  instructionCasing: ValidationSeverity.ERROR,
  instructionCmdMultiple: ValidationSeverity.ERROR,
  instructionEntrypointMultiple: ValidationSeverity.ERROR,
  instructionHealthcheckMultiple: ValidationSeverity.ERROR,
  instructionJSONInSingleQuotes: ValidationSeverity.ERROR,
  instructionWorkdirRelative: ValidationSeverity.ERROR,
};

const steps = (stage: typeof build, keyword: string) => stage.steps.filter((s) => s.keyword === keyword);

/** .dockerignore's verdict on a path of the build context (its last matching line decides). */
function ignored(path: string): boolean {
  const lines = readFileSync(resolve(root, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const top = path.split('/')[0]!;
  let out = false;
  for (const line of lines) {
    const negate = line.startsWith('!');
    const pattern = negate ? line.slice(1) : line;
    if (pattern.includes('/')) throw new Error(`.dockerignore line ${line}: this test matches top-level names only; extend it`);
    const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
    if (re.test(top)) out = !negate;
  }
  return out;
}

describe('deploy/Dockerfile', () => {
  it('has no linter diagnostic (dockerfile-utils, every check at error severity)', () => {
    const diagnostics = validate(text, strict).map((d) => `line ${d.range.start.line + 1}: ${d.message}`);
    expect(diagnostics).toEqual([]);
  });

  it('builds in a named stage and runs from a Node.js 20 slim image', () => {
    expect(parsed.stages.length).toBe(2);
    expect(build.name).toBe('build');
    for (const stage of parsed.stages) expect(stage.image).toMatch(/^node:20(\.\d+){0,2}-(\w+-)?slim(@sha256:[0-9a-f]{64})?$/);
    expect(steps(build, 'RUN').map((s) => s.content).join('\n')).toMatch(/\bnpm ci\b[\s\S]*\bnpm run build\b/);
  });

  it('installs only production dependencies, from the lockfile, in the runtime stage', () => {
    const runs = steps(runtime, 'RUN').map((s) => s.content);
    const installs = runs.filter((r) => /\bnpm (ci|install|i)\b/.test(r));
    expect(installs.length).toBe(1);
    expect(installs[0]).toMatch(/\bnpm ci\b.*--omit=dev\b/);
    expect(steps(runtime, 'ENV').flatMap((s) => s.args)).toContain('NODE_ENV=production');
    // The compiled server only, from the build stage (no compiler, no tests in the image).
    expect(steps(runtime, 'COPY').map((s) => `${s.flags.get('from') ?? ''} ${s.args.join(' ')}`)).toContain('build /src/dist/src ./dist/src');
  });

  it('runs as a numeric non-root user with its cache on a volume', () => {
    const users = steps(runtime, 'USER');
    expect(users.length).toBeGreaterThan(0);
    const [uid, gid] = numericOwner(users.at(-1)!.args[0]!);
    expect(uid).toBeGreaterThan(0);
    expect(gid).toBeGreaterThan(0);
    // Nothing after USER runs as that user at build time, and the code stays root's (read-only to it).
    const userIndex = runtime.steps.lastIndexOf(users.at(-1)!);
    expect(runtime.steps.slice(userIndex + 1).filter((s) => s.keyword === 'RUN' || s.keyword === 'COPY')).toEqual([]);
    expect(steps(runtime, 'VOLUME').flatMap((s) => s.args)).toContain('/var/lib/flotilla');
    const cacheCopy = steps(runtime, 'COPY').find((s) => s.args.at(-1) === '/var/lib/flotilla');
    expect(cacheCopy?.flags.get('chown')).toBe(`${uid}:${gid}`);
    expect(steps(runtime, 'ENTRYPOINT').at(-1)?.json).toEqual(['node', 'dist/src/main.js']);
  });

  it('keeps every RUN to paths under its WORKDIR and uses no ADD (so the steps run in a scratch directory)', () => {
    for (const stage of parsed.stages) {
      expect(steps(stage, 'ADD')).toEqual([]);
      for (const run of steps(stage, 'RUN')) expect(absolutePathIn(run.content), `line ${run.line}`).toBeNull();
    }
  });

  it('has a .dockerignore that keeps what the COPYs name and leaves out the rest', () => {
    const sources = parsed.stages.flatMap((s) => steps(s, 'COPY').filter((c) => !c.flags.has('from')).flatMap((c) => c.args.slice(0, -1)));
    expect(sources.length).toBeGreaterThan(0);
    for (const s of sources) expect(ignored(s), s).toBe(false);
    for (const p of ['node_modules', 'dist', '.git', '.cache', 'test', 'bench', 'deploy', 'flotilla-data']) expect(ignored(p), p).toBe(true);
  });

  it('refuses a RUN that names an absolute path (the runner’s guard)', () => {
    expect(absolutePathIn('npm ci && rm -rf /root/.npm')).toBe('/root/.npm');
    expect(absolutePathIn('mkdir -p cache-dir')).toBeNull();
    expect(absolutePathIn('npm ci --omit=dev')).toBeNull();
  });
});
