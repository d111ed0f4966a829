import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { gatherUpTo } from '../../../src/util/bounded-gather.js';

async function bytes(r: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('gatherUpTo', () => {
  const body = Buffer.from('x'.repeat(1000));
  const chunked = () => Readable.from(Array.from({ length: 10 }, (_, i) => body.subarray(i * 100, (i + 1) * 100)));

  it('gathers a stream, a buffer or a string within the bound whole', async () => {
    expect(await gatherUpTo(chunked(), 1000)).toEqual({ whole: body });
    expect(await gatherUpTo(body, 1000)).toEqual({ whole: body });
    expect(await gatherUpTo('abc', 3)).toEqual({ whole: Buffer.from('abc') });
  });

  it('past the bound, passes every byte on as it was, having read no more than one chunk past it', async () => {
    let pulled = 0;
    const counting = Readable.from((function* () {
      for (let i = 0; i < 10; i++) {
        pulled++;
        yield body.subarray(i * 100, (i + 1) * 100);
      }
    })());
    const gathered = await gatherUpTo(counting, 250);
    expect(pulled).toBeLessThanOrEqual(4);
    expect('passOn' in gathered!).toBe(true);
    expect(await bytes((gathered as { passOn: Readable }).passOn)).toEqual(body);
    expect(await gatherUpTo(body, 999)).toEqual({ passOn: body });
  });

  it('leaves what is not a body alone', async () => {
    expect(await gatherUpTo(undefined, 10)).toBeUndefined();
    expect(await gatherUpTo({ not: 'a stream' }, 10)).toBeUndefined();
  });
});
