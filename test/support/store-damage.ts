import { closeSync, openSync, readSync, writeSync } from 'node:fs';

/**
 * Damages an LMDB file the way a bad block or a flipped sector would, where it hurts a list:
 * in the leaf pages holding objects (found by a byte string their values contain), from the
 * middle of them on. Two kinds: `count` rewrites a page header's free-space bound so the page
 * seems to hold one node (a walk silently skips the rest: a short list), `bytes` flips bytes in
 * the middle of the page (garbled node headers, keys or values).
 */
const PAGE = 8192;
/** LMDB's page header: pgno (8), txnid (8), pad (2), flags (2), lower (2), upper (2). */
const FLAGS_AT = 18;
const LOWER_AT = 20;
const HEADER = 24;
const P_LEAF = 0x02;
/** The file is a 64 GiB sparse map: reading stops after this much nothing. */
const ZERO_RUN = 4 * 1024 * 1024;

export function damageObjectPages(file: string, marker: Buffer | string, opts: { kind: 'count' | 'bytes'; pages: number }): number {
  const fd = openSync(file, 'r+');
  try {
    const leaves: number[] = [];
    const page = Buffer.alloc(PAGE);
    let zeros = 0;
    for (let n = 0; zeros < ZERO_RUN; n++) {
      if (readSync(fd, page, 0, PAGE, n * PAGE) < PAGE) break;
      if (page.every((b) => b === 0)) {
        zeros += PAGE;
        continue;
      }
      zeros = 0;
      if ((page.readUInt16LE(FLAGS_AT) & P_LEAF) !== 0 && page.includes(marker)) leaves.push(n);
    }
    const chosen = leaves.slice(Math.floor(leaves.length / 2), Math.floor(leaves.length / 2) + opts.pages);
    for (const n of chosen) {
      readSync(fd, page, 0, PAGE, n * PAGE);
      if (opts.kind === 'count') page.writeUInt16LE(HEADER + 2, LOWER_AT);
      else for (let i = PAGE / 2; i < PAGE / 2 + 64; i++) page[i] = page[i]! ^ 0xff;
      writeSync(fd, page, 0, PAGE, n * PAGE);
    }
    return chosen.length;
  } finally {
    closeSync(fd);
  }
}
