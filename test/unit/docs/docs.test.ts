import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseFleetConfig } from '../../../src/registry/config.js';
import { docFiles, proseOf, relativeLinks, taggedBlocks } from '../../support/doc-blocks.js';

/**
 * The docs stay a first page and a set of pages that hold together: README.md short and free of
 * issue numbers, every relative link pointing to a file that exists, every fleet file shown valid,
 * and the runnable blocks (run by test/e2e/docs-commands.test.ts) shell blocks.
 */
const root = resolve(import.meta.dirname, '..', '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

describe('README.md', () => {
  it('is a first page: at most 250 lines', () => {
    expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(250);
  });

  it('speaks in plain words, not issue numbers', () => {
    const found = readme.split('\n').flatMap((l, i) => [...l.matchAll(/\bissues?\s+#?\d+|#\d+/gi)].map((m) => `README.md:${i + 1}: ${m[0]}`));
    expect(found).toEqual([]);
  });
});

describe('links between the docs', () => {
  it('point to files that exist', () => {
    const broken = docFiles(root).flatMap((file) => relativeLinks(file, readFileSync(join(root, file), 'utf8')))
      .filter((l) => l.target !== '' && !existsSync(resolve(root, dirname(l.file), decodeURIComponent(l.target))))
      .map((l) => `${l.file}:${l.line}: ${l.target}`);
    expect(broken).toEqual([]);
  });

  it('are found where they stand, and not inside code', () => {
    const text = 'See [a](docs/a.md#x) and [web](https://example.com).\n```sh\ncat [b](docs/b.md)\n```\n`[c](c.md)` [d](../d.md "title")';
    expect(relativeLinks('README.md', text).map((l) => [l.line, l.target])).toEqual([[1, 'docs/a.md'], [5, '../d.md']]);
    expect(proseOf(text).split('\n')).toHaveLength(text.split('\n').length);
  });
});

describe('fleet files in the docs', () => {
  const blocks = taggedBlocks(root, 'fleet-file');

  it('are there: the README shows one', () => {
    expect(blocks.filter((b) => b.file === 'README.md')).not.toHaveLength(0);
  });

  it.each(blocks.map((b) => [`${b.file}:${b.line}`, b] as const))('%s is valid', (_where, b) => {
    expect(() => parseFleetConfig(b.text, join(root, 'fleet.yaml'))).not.toThrow();
  });
});

describe('runnable blocks', () => {
  const blocks = taggedBlocks(root, 'runnable');

  it('are shell blocks, some in the README', () => {
    expect(blocks.length).toBeGreaterThan(3);
    expect(blocks.filter((b) => b.file === 'README.md')).not.toHaveLength(0);
    for (const b of blocks) expect(b.lang, `${b.file}:${b.line}`).toBe('sh');
  });
});
