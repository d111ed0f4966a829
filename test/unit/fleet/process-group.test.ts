import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killProcessGroup, procStatFields, startProcess } from '../../fleet/processes.js';

/** Running: not gone and not a zombie (an orphan killed waits for whoever adopted it to reap it). */
const alive = (pid: number) => {
  try {
    return procStatFields(`/proc/${pid}/stat`)[0] !== 'Z';
  } catch {
    return false;
  }
};

describe('a process started in a group of its own', () => {
  it('leaves what it started running when it exits, and killProcessGroup stops that', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-group-'));
    const proc = startProcess({
      name: 'group-leader',
      command: 'bash',
      // A child left behind, as a test cut short leaves its kubectl port-forward.
      args: ['-c', `sleep 300 & echo $! > ${join(dir, 'child')}`],
      logPath: join(dir, 'log'),
      pidFile: join(dir, 'pids'),
      ownGroup: true,
    });
    await new Promise<void>((resolve) => (proc.exited ? resolve() : proc.child.once('exit', () => resolve())));
    const child = Number(readFileSync(join(dir, 'child'), 'utf8'));
    expect(alive(child)).toBe(true);
    killProcessGroup(proc);
    for (let i = 0; i < 50 && alive(child); i++) await new Promise((r) => setTimeout(r, 20));
    expect(alive(child)).toBe(false);
  });
});
