// Progress of the cold build (scripts/ensure.mjs, scripts/build-fleet-binaries.mjs): which binary is
// being built, for how long, and what comes next. On a terminal one line redrawn each second (a bar
// of the steps done); otherwise, as in CI or a log, one plain line when a step starts and one when it
// ends. The Go toolchain's own output ("go: downloading …") is kept and shown only if a step fails.
import { spawn } from 'node:child_process';

/** Seconds as `4m07s` or `12s`. */
export function formatElapsed(ms) {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

const BAR_WIDTH = 20;

/**
 * A reporter for a known list of steps (labels, in the order they run). `stream` is where it
 * writes (stderr: stdout carries the directories the scripts print).
 */
export function createProgress(labels, { stream = process.stderr, prefix = 'build' } = {}) {
  const tty = Boolean(stream.isTTY) && process.env.TERM !== 'dumb';
  const startedAt = Date.now();
  let index = -1;
  let stepStartedAt = 0;
  let timer;

  const next = () => labels[index + 1];
  const line = () => {
    const done = Math.max(0, index);
    const filled = Math.round((done / labels.length) * BAR_WIDTH);
    const bar = `${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}`;
    const upcoming = next() ? ` · next: ${next()}` : '';
    return `${prefix} [${bar}] ${index + 1}/${labels.length} ${labels[index]} ${formatElapsed(Date.now() - stepStartedAt)}${upcoming} · ${formatElapsed(Date.now() - startedAt)} in all`;
  };
  const draw = () => {
    const text = line();
    const width = stream.columns ? stream.columns - 1 : text.length;
    stream.write(`\r${text.slice(0, width).padEnd(width)}`);
  };
  const clear = () => {
    if (timer) clearInterval(timer);
    timer = undefined;
    if (tty) stream.write(`\r${' '.repeat(stream.columns ? stream.columns - 1 : 0)}\r`);
  };

  return {
    /** Starts the next step (its label must be the next in the list). */
    start(label) {
      index = labels.indexOf(label, index + 1);
      if (index < 0) throw new Error(`progress: step ${label} is not in the plan`);
      stepStartedAt = Date.now();
      if (tty) {
        draw();
        timer = setInterval(draw, 1000);
        timer.unref();
      } else {
        stream.write(`${prefix}: [${index + 1}/${labels.length}] building ${label}${next() ? ` (next: ${next()})` : ''}\n`);
      }
    },
    /** Ends the current step. */
    done() {
      clear();
      stream.write(`${prefix}: [${index + 1}/${labels.length}] ${labels[index]} built in ${formatElapsed(Date.now() - stepStartedAt)} (${formatElapsed(Date.now() - startedAt)} in all)\n`);
    },
    /** A line about the current step (a binary of it linked), above the bar on a terminal. */
    note(text) {
      if (tty) {
        stream.write(`\r${' '.repeat(stream.columns ? stream.columns - 1 : 0)}\r${prefix}: ${text}\n`);
        draw();
      } else {
        stream.write(`${prefix}: ${text}\n`);
      }
    },
    /** Ends a failed step: the bar goes, and the caller prints why. */
    fail() {
      clear();
    },
    /** Time since the first step started. */
    elapsedMs: () => Date.now() - startedAt,
  };
}

/**
 * Runs a command, keeping what it prints (Go's "downloading" lines and the compiler's messages)
 * unless it fails: then it is written to stderr and the promise rejects.
 */
export function runQuiet(command, args, opts) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = [];
    child.stdout.on('data', (d) => output.push(d));
    child.stderr.on('data', (d) => output.push(d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) return resolve();
      process.stderr.write(`\n$ ${command} ${args.join(' ')}\n${Buffer.concat(output).toString('utf8')}`);
      reject(new Error(`${command} ${args.slice(0, 2).join(' ')} … failed (${signal ?? `exit ${code}`})`));
    });
  });
}
