import type { MemberClient } from '../members/member-client.js';
import { collectionPath, type BookmarkTemplate, type ResourceInfo } from '../api/resource-info.js';

// Matches no object: the watch sends nothing but its initial-events-end bookmark.
const NOTHING = 'search.flotilla.io/none,!search.flotilla.io/none';
const TABLE_WITH_OBJECT = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const LINE_LIMIT = 64 * 1024;

/**
 * Learns how a member writes a bookmark of a resource: a watch-list that selects nothing, in Table
 * form with the row objects, whose first line is the initial-events-end bookmark; the watch is
 * closed as soon as that line is read. Undefined when the member cannot (no watch-list, an error):
 * flotilla's bookmarks then keep their own generic form.
 */
export async function learnBookmarkTemplate(member: MemberClient, info: ResourceInfo, signal?: AbortSignal): Promise<BookmarkTemplate | undefined> {
  const query = new URLSearchParams({
    watch: '1', sendInitialEvents: 'true', resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: 'true',
    labelSelector: NOTHING, includeObject: 'Object', timeoutSeconds: '5',
  });
  const done = new AbortController();
  const onAbort = () => done.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const res = await member.send({ path: `${collectionPath(info)}?${query}`, headers: { accept: TABLE_WITH_OBJECT }, signal: done.signal });
    if (res.statusCode !== 200) return undefined;
    let text = '';
    for await (const chunk of res) {
      text += (chunk as Buffer).toString('utf8');
      const newline = text.indexOf('\n');
      if (newline >= 0) return templateOf(text.slice(0, newline), info.kind);
      if (text.length > LINE_LIMIT) return undefined;
    }
    return undefined;
  } catch {
    return undefined;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    done.abort();
  }
}

export function templateOf(line: string, kind: string): BookmarkTemplate | undefined {
  const event = JSON.parse(line) as { type?: string; object?: { kind?: string; rows?: { cells?: unknown[]; object?: Record<string, unknown> }[] } };
  const row = event.object?.kind === 'Table' ? event.object.rows?.[0] : undefined;
  if (event.type !== 'BOOKMARK' || !row?.object || row.object['kind'] !== kind || !Array.isArray(row.cells)) return undefined;
  let fields = '';
  for (const [k, v] of Object.entries(row.object)) {
    if (k !== 'kind' && k !== 'apiVersion' && k !== 'metadata') fields += `,${JSON.stringify(k)}:${JSON.stringify(v)}`;
  }
  return { fields, cells: row.cells };
}
