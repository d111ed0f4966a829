import { expect } from 'vitest';
import { memberRequest, type MemberEndpoint } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { decodeGlobalRV } from '../../src/api/global-rv.js';

/**
 * Compares what flotilla serves for a list path with what the members hold: every object by
 * cluster, namespace, name, uid and member resourceVersion.
 */
const CLUSTER_ANNOTATION = 'search.flotilla.io/cluster';

interface Item {
  metadata: { name: string; namespace?: string; uid: string; resourceVersion: string; annotations?: Record<string, string> };
}

async function list(ep: MemberEndpoint, path: string): Promise<Item[]> {
  const res = await memberRequest(ep, 'GET', path, undefined, { timeoutMs: 60_000 });
  if (res.status !== 200) throw new Error(`GET ${path} on ${ep.server}: ${res.status} ${res.body.slice(0, 300)}`);
  return (JSON.parse(res.body) as { items: Item[] }).items;
}

export async function membersView(members: MemberInfo[], path: string): Promise<string[]> {
  const views = await Promise.all(
    members.map(async (m) => (await list(m, path)).map((i) => `${m.name}/${i.metadata.namespace ?? ''}/${i.metadata.name}@${i.metadata.uid}@${i.metadata.resourceVersion}`)),
  );
  return views.flat().sort();
}

export async function flotillaView(ep: MemberEndpoint, path: string): Promise<string[]> {
  return (await list(ep, path))
    .map((i) => {
      const cluster = i.metadata.annotations?.[CLUSTER_ANNOTATION] ?? '?';
      const rv = decodeGlobalRV(i.metadata.resourceVersion)[cluster];
      return `${cluster}/${i.metadata.namespace ?? ''}/${i.metadata.name}@${i.metadata.uid}@${rv}`;
    })
    .sort();
}

/** Waits until flotilla's view equals the members' (both read again each try), then asserts it. */
export async function expectConverged(ep: MemberEndpoint, members: MemberInfo[], path: string, timeoutMs = 20_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let direct = await membersView(members, path);
  let cached = await flotillaView(ep, path);
  while (JSON.stringify(direct) !== JSON.stringify(cached) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    direct = await membersView(members, path);
    cached = await flotillaView(ep, path);
  }
  expect(cached).toEqual(direct);
  return cached;
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

export interface CacherStatusView {
  cluster: string;
  resource: string;
  namespace?: string;
  phase: string;
  synced: boolean;
  objects: number;
  relists: number;
  watches: number;
  rv?: string;
}

/** The cachers of the configured resources (not those of the RBAC objects flotilla caches to authorize reads). */
export async function cacherStatus(ep: MemberEndpoint): Promise<CacherStatusView[]> {
  const res = await memberRequest(ep, 'GET', '/status');
  return (JSON.parse(res.body) as { cachers: CacherStatusView[] }).cachers.filter((c) => !c.resource.startsWith('rbac.authorization.k8s.io/'));
}
