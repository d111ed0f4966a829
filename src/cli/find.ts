import { CLUSTER_ANNOTATION } from '../api/fleet-object/cluster-annotation.js';
import { ageCell } from '../table/human-duration.js';
import { connectToFlotilla } from './connection.js';
import { EXIT_FAILED, EXIT_OK, type Io } from './io.js';
import type { FindFlags } from './options.js';
import { renderTable } from './text-table.js';

/**
 * `kubectl flotilla find TEXT`: objects of every cached kind the caller may read whose names hold
 * TEXT (case aside), through flotilla's find (`/apis/search.flotilla.io/v1alpha1/find`, every page
 * of it): a row each, kind, cluster, namespace, name, age. `-l` adds search terms and labels
 * (`-l cluster.search.flotilla.io/env=prod`), `--kinds` narrows the kinds.
 */
export interface FoundItem {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; creationTimestamp?: string; annotations?: Record<string, string> };
}

/** The find's path for one page. */
export function findPath(text: string | undefined, flags: FindFlags, continueToken?: string): string {
  const q = new URLSearchParams();
  if (text) q.set('q', text);
  if (flags.selector) q.set('labelSelector', flags.selector);
  if (flags.kinds) q.set('kinds', flags.kinds);
  if (flags.namespace) q.set('namespace', flags.namespace);
  if (continueToken) q.set('continue', continueToken);
  return `/apis/search.flotilla.io/v1alpha1/find?${q.toString()}`;
}

/** The rows printed: kind (with its group), cluster, namespace, name, age; in the order found. */
export function foundRows(items: readonly FoundItem[], now = Date.now()): string[][] {
  return items.map((i) => {
    const group = i.apiVersion?.includes('/') ? i.apiVersion.slice(0, i.apiVersion.indexOf('/')) : '';
    return [`${i.kind ?? ''}${group ? `.${group}` : ''}`, i.metadata?.annotations?.[CLUSTER_ANNOTATION] ?? '', i.metadata?.namespace ?? '', i.metadata?.name ?? '', ageCell(i.metadata?.creationTimestamp, now)];
  });
}

export async function showFind(text: string | undefined, flags: FindFlags, io: Io): Promise<number> {
  if (!text && !flags.selector) {
    io.err('find needs a text to look for in names, or -l with search terms\n');
    return EXIT_FAILED;
  }
  const flotilla = await connectToFlotilla(flags);
  try {
    const items: FoundItem[] = [];
    let token: string | undefined;
    do {
      const page = await flotilla.getJson<{ metadata?: { continue?: string }; items?: FoundItem[] }>(findPath(text, flags, token));
      items.push(...(page.items ?? []));
      token = page.metadata?.continue;
    } while (token);
    if (flags.output === 'json') {
      io.out(`${JSON.stringify({ kind: 'FindResultList', apiVersion: 'search.flotilla.io/v1alpha1', metadata: {}, items }, null, 2)}\n`);
      return EXIT_OK;
    }
    if (items.length === 0) {
      io.err('No objects found.\n');
      return EXIT_OK;
    }
    io.out(renderTable(['KIND', 'CLUSTER', 'NAMESPACE', 'NAME', 'AGE'], foundRows(items), io.color));
    return EXIT_OK;
  } finally {
    flotilla.close();
  }
}
