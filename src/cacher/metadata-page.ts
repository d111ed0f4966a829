import type { MemberClient } from '../members/member-client.js';
import { LIST_PAGE_IDLE_TIMEOUT_MS } from '../registry/defaults.js';

/**
 * One page of a member scope's metadata, read consistently at the member's latest: what the
 * history check (history-check.ts) and a fresh read's confirmation (fresh-reads.ts) compare with
 * the store. Metadata only (PartialObjectMetadataList): a page of 100 is a few tens of KB.
 */

/** An object of a member's scope by name, at the member's resourceVersion. */
export interface MemberObjectRV {
  namespace: string;
  name: string;
  rv: string;
}

export interface MetadataPage {
  /** The list's resourceVersion: the member's revision when it answered. */
  rv?: string;
  /** The page's objects that carry a name and a resourceVersion. */
  objects: MemberObjectRV[];
  /** Whether the page is the whole scope: no `continue`, and every item carried both. */
  whole: boolean;
}

const METADATA_ACCEPT = 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json';

interface MetadataList {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: { metadata?: { name?: string; namespace?: string; resourceVersion?: string } }[];
}

/** The first `limit` objects of the scope at `path`; an answer other than 200 is an Error naming what was asked. */
export async function readMetadataPage(member: MemberClient, path: string, limit: number, signal: AbortSignal): Promise<MetadataPage> {
  const res = await member.fetch({ path: `${path}${path.includes('?') ? '&' : '?'}limit=${limit}`, headers: { accept: METADATA_ACCEPT }, signal, idleTimeoutMs: LIST_PAGE_IDLE_TIMEOUT_MS });
  if (res.status !== 200) throw new Error(`a page of ${path} from ${member.cluster}: HTTP ${res.status}: ${res.body.toString('utf8', 0, 300)}`);
  const list = JSON.parse(res.body.toString('utf8')) as MetadataList;
  const items = list.items ?? [];
  const objects: MemberObjectRV[] = [];
  for (const item of items) {
    const { name, namespace = '', resourceVersion } = item.metadata ?? {};
    if (name !== undefined && resourceVersion !== undefined) objects.push({ namespace, name, rv: resourceVersion });
  }
  return { rv: list.metadata?.resourceVersion, objects, whole: !list.metadata?.continue && objects.length === items.length };
}
