import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataDirError, ensureDataDir } from '../../../src/store/store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function scratch(): string {
  const d = mkdtempSync(join(tmpdir(), 'flotilla-data-dir-'));
  dirs.push(d);
  return d;
}

/** A directory this process cannot write in: a read-only tmpfs as root (root ignores modes), else mode 0555. */
function unwritableDir(): { dir: string; release(): void } | undefined {
  const dir = join(scratch(), 'locked');
  mkdirSync(dir);
  if (process.getuid?.() !== 0) {
    chmodSync(dir, 0o555);
    return { dir, release: () => chmodSync(dir, 0o755) };
  }
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  return { dir, release: () => execFileSync('umount', [dir]) };
}

describe('ensureDataDir', () => {
  it('makes a missing data directory, nested', () => {
    const dir = join(scratch(), 'a', 'b');
    ensureDataDir(dir);
    ensureDataDir(dir);
  });

  it('says which path is not writable, and by whom, instead of an errno', () => {
    const locked = unwritableDir();
    if (!locked) return;
    try {
      const fail = (path: string) => {
        try {
          ensureDataDir(path);
        } catch (e) {
          expect(e).toBeInstanceOf(DataDirError);
          return (e as Error).message;
        }
        throw new Error('no error');
      };
      const reason = process.getuid?.() === 0 ? 'is on a read-only filesystem' : `is not writable by uid ${process.getuid?.()}`;
      expect(fail(join(locked.dir, 'data', 'more'))).toBe(`data directory ${join(locked.dir, 'data', 'more')} cannot be created: ${locked.dir} ${reason}`);
      expect(fail(locked.dir)).toContain(`data directory ${locked.dir} cannot be used: ${locked.dir} ${reason}`);
    } finally {
      locked.release();
    }
  });

  it('says when the path is a file', () => {
    const file = join(scratch(), 'file');
    writeFileSync(file, '');
    expect(() => ensureDataDir(file)).toThrow(`data directory ${file} cannot be used: ${file} is not a directory`);
    expect(() => ensureDataDir(join(file, 'data'))).toThrow(/is not a directory/);
  });
});
