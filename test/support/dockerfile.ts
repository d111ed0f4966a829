import { spawnSync } from 'node:child_process';
import { chownSync, cpSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { basename, join, posix, resolve } from 'node:path';
import { DockerfileParser } from 'dockerfile-ast';
import type { Instruction } from 'dockerfile-ast';

/**
 * deploy/Dockerfile as stages of plain steps, and a runner that carries out the steps that make the
 * image's files (WORKDIR, ENV, ARG, COPY, RUN) in a scratch directory instead of a container: no
 * container engine is at hand, and running the same commands keeps them from rotting.
 */
export interface Step {
  keyword: string;
  /** The shell form's text (flags left out), or the JSON form's strings joined by spaces. */
  content: string;
  args: string[];
  /** The JSON (exec) form's strings, when the instruction has that form. */
  json: string[] | null;
  flags: Map<string, string | null>;
  line: number;
}

export interface Stage {
  name: string | null;
  /** The base image with the Dockerfile's global ARG defaults substituted. */
  image: string;
  steps: Step[];
}

export interface ParsedDockerfile {
  globalArgs: Map<string, string>;
  stages: Stage[];
}

function substitute(text: string, vars: Map<string, string>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (m, a?: string, b?: string) => vars.get((a ?? b)!) ?? m);
}

function jsonStrings(i: Instruction): string[] | null {
  const withJson = i as Instruction & { getJSONStrings?: () => { getJSONValue(): string }[] };
  if (!withJson.getJSONStrings) return null;
  const strings = withJson.getJSONStrings().map((s) => s.getJSONValue());
  return strings.length ? strings : null;
}

function flagsOf(i: Instruction): Map<string, string | null> {
  const withFlags = i as Instruction & { getFlags?: () => { getName(): string; getValue(): string | null }[] };
  return new Map((withFlags.getFlags?.() ?? []).map((f) => [f.getName(), f.getValue()]));
}

export function parseDockerfile(text: string): ParsedDockerfile {
  const df = DockerfileParser.parse(text);
  const globalArgs = new Map<string, string>();
  for (const arg of df.getInitialARGs()) {
    const p = arg.getProperty();
    if (p) globalArgs.set(p.getName(), p.getUnescapedValue() ?? '');
  }
  const stages: Stage[] = [];
  for (const i of df.getInstructions()) {
    const keyword = i.getKeyword();
    if (keyword === 'FROM') {
      const from = df.getFROMs().find((f) => f.getRange().start.line === i.getRange().start.line)!;
      stages.push({ name: from.getBuildStage(), image: substitute(from.getImage() ?? '', globalArgs), steps: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) continue; // a global ARG (in globalArgs) or a parser directive
    const json = jsonStrings(i);
    const flags = flagsOf(i);
    // The parser leaves a RUN's or COPY's flags out of its arguments; stripFlags is for older forms.
    const content = json ? json.join(' ') : stripFlags(i.getArgumentsContent() ?? '', flags);
    stage.steps.push({ keyword, content, args: json ?? i.getArguments().map((a) => a.getValue()), json, flags, line: i.getRange().start.line + 1 });
  }
  return { globalArgs, stages };
}

function stripFlags(content: string, flags: Map<string, string | null>): string {
  let rest = content.trimStart();
  while (rest.startsWith('--')) {
    const name = rest.slice(2).split(/[=\s]/)[0]!;
    if (!flags.has(name)) break;
    rest = rest.replace(/^--\S*\s*/, '');
  }
  return rest;
}

/** `USER`/`--chown` as numbers; a name would need the image's /etc/passwd. */
export function numericOwner(spec: string, where = 'USER'): [number, number] {
  const m = /^(\d+)(?::(\d+))?$/.exec(spec);
  if (!m) throw new Error(`${where}: ${spec} is not a numeric uid[:gid]`);
  return [Number(m[1]), Number(m[2] ?? m[1])];
}

function chownTree(path: string, uid: number, gid: number): void {
  chownSync(path, uid, gid);
  if (statSync(path).isDirectory()) for (const e of readdirSync(path)) chownTree(join(path, e), uid, gid);
}

export interface StageResult {
  stage: Stage;
  /** The stage's file system root in the scratch directory. */
  root: string;
  workdir: string;
  env: Record<string, string>;
  user: string | null;
}

/** An absolute path in a RUN command would reach outside the scratch directory. */
export function absolutePathIn(command: string): string | null {
  const m = /(?:^|[\s=;&|'"(<>])(\/[^\s;&|'")]*)/.exec(command);
  return m ? m[1]! : null;
}

function hostEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    // What the test runner and an enclosing `npm run` put there is not what a build sees.
    if (v === undefined || k === 'NODE_ENV' || k.startsWith('VITEST') || k.startsWith('npm_lifecycle_') || k.startsWith('npm_package_') || k === 'npm_command' || k === 'INIT_CWD') continue;
    env[k] = v;
  }
  return env;
}

/**
 * Runs every stage's WORKDIR, ENV, ARG, COPY and RUN in `scratch` (one root per stage): context
 * COPYs from `contextDir`, `COPY --from` from the named stage's root, RUN through `sh -c` in the
 * stage's WORKDIR with its ENV and ARGs over this process's environment. A RUN cache mount stands
 * for the host's own cache (npm's, for `npm ci`); any other flag or instruction is refused, as is a
 * RUN that names an absolute path. `extraEnv` goes to every RUN (e.g. npm's prefer-offline).
 */
export function runStages(parsed: ParsedDockerfile, contextDir: string, scratch: string, extraEnv: Record<string, string> = {}): StageResult[] {
  const results: StageResult[] = [];
  const byName = new Map<string, StageResult>();
  parsed.stages.forEach((stage, index) => {
    const root = join(scratch, `stage-${index}`);
    mkdirSync(root, { recursive: true });
    const result: StageResult = { stage, root, workdir: '/', env: {}, user: null };
    const inRoot = (p: string) => join(root, posix.resolve(result.workdir, p));
    for (const step of stage.steps) {
      const where = `Dockerfile line ${step.line} (${step.keyword} ${step.content})`;
      switch (step.keyword) {
        case 'WORKDIR':
          result.workdir = posix.resolve(result.workdir, step.args[0]!);
          mkdirSync(join(root, result.workdir), { recursive: true });
          break;
        case 'ENV':
        case 'ARG':
          for (const a of step.args) {
            const eq = a.indexOf('=');
            const name = eq < 0 ? a : a.slice(0, eq);
            const value = eq < 0 ? (parsed.globalArgs.get(name) ?? '') : a.slice(eq + 1).replace(/^"(.*)"$/, '$1');
            result.env[name] = value;
          }
          break;
        case 'COPY': {
          for (const f of step.flags.keys()) if (f !== 'from' && f !== 'chown' && f !== 'chmod') throw new Error(`${where}: flag --${f} is not exercised`);
          const from = step.flags.get('from');
          const sources = step.args.slice(0, -1);
          const dest = step.args.at(-1)!;
          const source = from ? byName.get(from) : undefined;
          if (from && !source) throw new Error(`${where}: no earlier stage named ${from}`);
          const destIsDir = dest.endsWith('/') || sources.length > 1;
          for (const s of sources) {
            let src: string;
            if (source) {
              src = join(source.root, posix.resolve(source.workdir, s));
            } else {
              if (posix.isAbsolute(s) || s.split('/').includes('..')) throw new Error(`${where}: context source ${s} leaves the context`);
              src = resolve(contextDir, s);
            }
            if (!existsSync(src)) throw new Error(`${where}: ${s} does not exist (${src})`);
            const target = inRoot(dest);
            const copied = statSync(src).isDirectory() ? target : destIsDir ? join(target, basename(src)) : target;
            cpSync(src, copied, { recursive: true });
            const chown = step.flags.get('chown');
            // As root the owner is given as the image would have it; otherwise it stays this user.
            if (chown && process.getuid?.() === 0) chownTree(copied, ...numericOwner(chown, where));
          }
          break;
        }
        case 'RUN': {
          for (const [f, v] of step.flags) {
            if (f !== 'mount' || !/(^|,)type=cache(,|$)/.test(v ?? '')) throw new Error(`${where}: flag --${f}=${v} is not exercised`);
          }
          const absolute = absolutePathIn(step.content);
          if (absolute) throw new Error(`${where}: names the absolute path ${absolute}; keep RUN to paths under WORKDIR so it can run in a scratch directory`);
          const cwd = join(root, result.workdir);
          const argv = step.json ?? ['sh', '-c', step.content];
          const r = spawnSync(argv[0]!, argv.slice(1), { cwd, env: { ...hostEnv(), ...result.env, ...extraEnv }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
          if (r.status !== 0) throw new Error(`${where}: exit ${r.status ?? r.signal}\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-4000)}`);
          break;
        }
        case 'USER':
          result.user = step.args[0] ?? null;
          break;
        case 'EXPOSE':
        case 'VOLUME':
        case 'ENTRYPOINT':
        case 'CMD':
        case 'LABEL':
          break; // metadata: nothing to carry out
        default:
          throw new Error(`${where}: ${step.keyword} is not exercised by this runner`);
      }
    }
    results.push(result);
    if (stage.name) byName.set(stage.name, result);
  });
  return results;
}
