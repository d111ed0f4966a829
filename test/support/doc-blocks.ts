import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The project's Markdown as tests read it: the fenced blocks a doc marks for testing and its
 * relative links. A block is marked by words after the fence's language:
 *   ```sh runnable     run by test/e2e/docs-commands.test.ts against the test fleet (`sh -e`)
 *   ```yaml fleet-file  a fleet file, validated by the fleet file's own parser
 */
export interface DocBlock {
  /** The file, relative to the project root (`README.md`, `docs/semantics.md`). */
  file: string;
  /** The line of the opening fence, 1-based. */
  line: number;
  lang: string;
  tags: string[];
  text: string;
}

export interface DocLink {
  file: string;
  line: number;
  target: string;
}

/** README.md and every Markdown file in docs/, relative to `root`. */
export function docFiles(root: string): string[] {
  const docs = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)\s*(.*)$/;

/** Every fenced block of one Markdown text, with its language and the words after it. */
export function fencedBlocks(file: string, text: string): DocBlock[] {
  const blocks: DocBlock[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const fence = open[2]!;
    const body: string[] = [];
    let j = i + 1;
    // A fence closes on a line of the same character, at least as long, and nothing else.
    for (; j < lines.length && !new RegExp(`^\\s*${fence[0]}{${fence.length},}\\s*$`).test(lines[j]!); j++) body.push(lines[j]!);
    blocks.push({ file, line: i + 1, lang: open[3]!, tags: open[4]!.split(/\s+/).filter(Boolean), text: body.join('\n') });
    i = j;
  }
  return blocks;
}

/** The blocks of every doc that carry `tag`. */
export function taggedBlocks(root: string, tag: string): DocBlock[] {
  return docFiles(root).flatMap((f) => fencedBlocks(f, readFileSync(join(root, f), 'utf8'))).filter((b) => b.tags.includes(tag));
}

/** The text outside fenced blocks and inline code, where links and prose live (same line count). */
export function proseOf(text: string): string {
  const lines = text.split('\n');
  const out = [...lines];
  for (const b of fencedBlocks('', text)) {
    const end = b.line + b.text.split('\n').length;
    for (let i = b.line - 1; i <= Math.min(end, lines.length - 1); i++) out[i] = '';
  }
  return out.map((l) => l.replace(/`[^`]*`/g, '``')).join('\n');
}

/** Links to files of the project (`[x](docs/a.md#part)`, `[x](../README.md)`): not URLs, not anchors. */
export function relativeLinks(file: string, text: string): DocLink[] {
  const links: DocLink[] = [];
  proseOf(text).split('\n').forEach((l, i) => {
    for (const m of l.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue;
      links.push({ file, line: i + 1, target: target.split('#')[0]! });
    }
  });
  return links;
}
