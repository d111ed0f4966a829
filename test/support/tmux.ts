import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { until } from './poll.js';

/**
 * A terminal program run in a detached tmux session on a server of its own (`tmux -L <socket>`),
 * so that nothing else on the machine is touched: keys go in with send-keys, the screen comes back
 * with capture-pane.
 */
export interface TmuxSession {
  /** The program's PID (the pane's process: the program is exec'd in it). */
  readonly pid: number;
  /** The screen as text, one line per row. */
  screen(): string;
  /** Keys as tmux names them (`Enter`, `Escape`, `C-c`) or literal text with `{ literal: true }`. */
  keys(keys: string[], opts?: { literal?: boolean }): void;
  /** Polls the screen until `check` holds (or a bounded wait ends); resolves with that screen. */
  waitFor(what: string, check: (screen: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Kills the program by its PID, then the tmux server by its socket. */
  stop(): void;
}

const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

export function startTmux(opts: { socket: string; dir: string; command: string[]; env: Record<string, string>; width?: number; height?: number }): TmuxSession {
  const tmux = (args: string[]) => execFileSync('tmux', ['-L', opts.socket, ...args], { encoding: 'utf8' });
  // No user tmux.conf; the pane stays when the program exits, so a crash shows on the screen.
  const conf = join(opts.dir, `${opts.socket}.tmux.conf`);
  writeFileSync(conf, 'set -g remain-on-exit on\n');
  const env = Object.entries(opts.env).map(([k, v]) => `${k}=${shellQuote(v)}`).join(' ');
  tmux(['-f', conf, 'new-session', '-d', '-s', 'main', '-x', String(opts.width ?? 200), '-y', String(opts.height ?? 50),
    `exec env ${env} ${opts.command.map(shellQuote).join(' ')}`]);
  const pid = Number(tmux(['display-message', '-p', '-t', 'main', '#{pane_pid}']).trim());
  let last = '';
  const session: TmuxSession = {
    pid,
    screen: () => (last = tmux(['capture-pane', '-p', '-t', 'main'])),
    keys: (keys, o = {}) => void tmux(['send-keys', '-t', 'main', ...(o.literal ? ['-l'] : []), ...keys]),
    async waitFor(what, check, timeoutMs = 20_000) {
      try {
        await until(what, () => check(session.screen()), timeoutMs);
      } catch (e) {
        throw new Error(`${(e as Error).message}; the screen:\n${last}`);
      }
      return last;
    },
    stop() {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
      try {
        tmux(['kill-server']);
      } catch {
        // no server left
      }
    },
  };
  return session;
}
