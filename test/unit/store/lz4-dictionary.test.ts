import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { OBJECT_COMPRESSION, StoredForms } from '../../../src/store/object-compression.js';
import { OBJECT_DICTIONARY } from '../../../src/store/object-dictionary.js';

/**
 * What the ingest workers compress must read back through lmdb-js's own decompression
 * (LZ4_decompress_safe_usingDict with the store's dictionary): the only reader there is.
 */
const dir = mkdtempSync(join(tmpdir(), 'flotilla-lz4-'));
const root = open({ path: dir, maxDbs: 4 });
const asStored = root.openDB<Buffer, string>({ name: 'objects', encoding: 'binary' });
const decompressing = root.openDB<Buffer, string>({ name: 'objects', encoding: 'binary', compression: OBJECT_COMPRESSION });
afterAll(async () => {
  await root.close();
  rmSync(dir, { recursive: true, force: true });
});

const forms = new StoredForms();
let n = 0;
async function roundTrip(bytes: Uint8Array): Promise<{ back: Buffer | undefined; stored: number }> {
  forms.reset();
  const form = forms.add(bytes);
  expect(form).toBeDefined();
  const key = `k${n++}`;
  await asStored.put(key, Buffer.from(form!));
  return { back: decompressing.get(key), stored: form!.length };
}

const dictionaryText = OBJECT_DICTIONARY.toString('latin1');
/** Pieces of the dictionary, random bytes and runs: matches into the dictionary, inside the input, overlapping, none. */
const piece = fc.oneof(
  fc.tuple(fc.nat(dictionaryText.length - 1), fc.integer({ min: 1, max: 300 })).map(([at, len]) => Buffer.from(dictionaryText.slice(at, at + len), 'latin1')),
  fc.uint8Array({ minLength: 1, maxLength: 200 }).map((a) => Buffer.from(a)),
  fc.tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 1, max: 5000 })).map(([b, len]) => Buffer.alloc(len, b)),
  fc.string({ minLength: 1, maxLength: 100 }).map((s) => Buffer.from(s)),
);
const input = fc.array(piece, { minLength: 1, maxLength: 60 }).map((ps) => Buffer.concat(ps)).filter((b) => b.length >= 512);

describe('LZ4 with the store dictionary', () => {
  it('reads back exactly through lmdb-js, whatever the bytes', async () => {
    await fc.assert(
      fc.asyncProperty(input, async (bytes) => {
        const { back } = await roundTrip(bytes);
        expect(back?.equals(bytes)).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('handles the edges: the threshold, matches reaching 64 KB back, a run to the end, 1.5 MB', async () => {
    const json = Buffer.from(JSON.stringify({ ...JSON.parse(dictionaryText), extra: 'x'.repeat(10) }));
    const cases = [
      Buffer.alloc(512, 97),
      Buffer.concat([json, Buffer.alloc(13, 98)]),
      // The same 4 KB again after 63 KB and 66 KB of noise: one copy in reach of a match, one out of it.
      Buffer.concat([json, Buffer.from(Array.from({ length: 63 * 1024 }, (_, i) => (i * 7919) & 255)), json, Buffer.from(Array.from({ length: 66 * 1024 }, (_, i) => (i * 104729) & 255)), json]),
      Buffer.concat(Array.from({ length: 600 }, () => json)),
    ];
    for (const bytes of cases) {
      const { back, stored } = await roundTrip(bytes);
      expect(back?.equals(bytes), `${bytes.length} bytes`).toBe(true);
      expect(stored).toBeLessThanOrEqual(bytes.length + bytes.length / 255 + 20);
    }
  });

  it('makes a pod like the dictionary a few dozen bytes', async () => {
    const pod = JSON.parse(dictionaryText) as { metadata: { name: string; uid: string } };
    pod.metadata.name = 'web-7d4b9c6f5d-abcde';
    pod.metadata.uid = '0f0e0d0c-1111-2222-3333-444455556666';
    const { back, stored } = await roundTrip(Buffer.from(JSON.stringify(pod)));
    expect(back?.toString()).toBe(JSON.stringify(pod));
    expect(stored).toBeLessThan(120);
  });
});
