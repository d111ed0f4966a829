import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ESM script without types
import { createProgress, formatElapsed } from '../../../scripts/build-progress.mjs';

interface Progress { start(label: string): void; done(): void; fail(): void; note(text: string): void }
const progressOf = createProgress as (labels: string[], opts: { stream: { write(s: string): boolean; isTTY?: boolean; columns?: number } }) => Progress;

function sink(tty: boolean) {
  const out: string[] = [];
  return { out, stream: { write: (s: string) => out.push(s) > 0, isTTY: tty, columns: 120 } };
}

describe('build progress', () => {
  it('writes a plain line per step start and end, naming what comes next, off a terminal', () => {
    const { out, stream } = sink(false);
    const p = progressOf(['etcd', 'kwok', 'helm'], { stream });
    p.start('etcd');
    p.done();
    p.start('kwok');
    p.done();
    p.start('helm');
    p.done();
    expect(out[0]).toBe('build: [1/3] building etcd (next: kwok)\n');
    expect(out[1]).toMatch(/^build: \[1\/3\] etcd built in \d+s \(\d+s in all\)\n$/);
    expect(out[4]).toBe('build: [3/3] building helm\n');
    expect(out.every((l) => !l.includes('\r'))).toBe(true);
  });

  it('redraws one line with a bar on a terminal', () => {
    const { out, stream } = sink(true);
    const p = progressOf(['a', 'b'], { stream });
    p.start('a');
    p.done();
    p.start('b');
    expect(out[0]).toMatch(/^\rbuild \[-{20}\] 1\/2 a 0s · next: b · 0s in all/);
    expect(out.at(-1)).toMatch(/^\rbuild \[#{10}-{10}\] 2\/2 b 0s · 0s in all/);
    p.fail();
  });

  it('writes a note above the bar on a terminal, and as a plain line off one', () => {
    const tty = sink(true);
    const p = progressOf(['fleet'], { stream: tty.stream });
    p.start('fleet');
    p.note('etcd linked after 1m02s; still building: kwok');
    expect(tty.out.at(-2)).toMatch(/^\r +\rbuild: etcd linked after 1m02s; still building: kwok\n$/);
    expect(tty.out.at(-1)).toMatch(/^\rbuild \[-{20}\] 1\/1 fleet/);
    p.fail();
    const plain = sink(false);
    const q = progressOf(['fleet'], { stream: plain.stream });
    q.start('fleet');
    q.note('etcd linked after 3s');
    expect(plain.out.at(-1)).toBe('build: etcd linked after 3s\n');
  });

  it('refuses a step that is not in the plan', () => {
    const { stream } = sink(false);
    expect(() => progressOf(['a'], { stream }).start('b')).toThrow('not in the plan');
  });

  it('formats elapsed time', () => {
    expect([formatElapsed(12_000), formatElapsed(247_000)]).toEqual(['12s', '4m07s']);
  });
});
