import type { MemberInfo } from '../fleet/fleet.js';
import { memberRequest, type MemberEndpoint } from '../fleet/http.js';

/**
 * Fleet search's oracle for e2e tests (docs/search.md, docs/search-owners.md): the terms as a
 * label selector, and a brute-force filter of the members' own lists written from the documented
 * rules, not from flotilla's code. An object is compared as `<cluster>/<name>`.
 */
export const CLUSTER = 'search.flotilla.io/cluster';

export interface Obj {
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    creationTimestamp: string;
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; uid: string }[];
  };
}

/** One object as a member holds it; `kind` where owner terms need it (list items carry none). */
export interface Listed {
  cluster: string;
  kind?: string;
  o: Obj;
}

/** Each member's labels in the fleet file. */
export type FleetLabels = Readonly<Record<string, Readonly<Record<string, string>>>>;

export interface Terms {
  clusterLabel?: { key: string; op: '=' | '!=' | 'in' | 'notin' | 'exists' | '!'; values: string[] };
  cluster?: { op: 'in' | 'notin'; values: string[] };
  contains?: string;
  prefix?: string;
  after?: number;
  before?: number;
  /** By uid, or by Kind and name; `depth` absent: every level. */
  owner?: { uid?: string; kind?: string; name?: string; depth?: number };
}

export const keyOf = (cluster: string, o: Obj): string => `${cluster}/${o.metadata.name}`;
/** An object flotilla served, keyed by the cluster its annotation names. */
export const flotillaKey = (o: Obj): string => keyOf(o.metadata.annotations?.[CLUSTER] ?? '?', o);

export function selectorOf(t: Terms): string {
  const out: string[] = [];
  const l = t.clusterLabel;
  if (l) {
    const key = `cluster.search.flotilla.io/${l.key}`;
    out.push(l.op === 'exists' ? key : l.op === '!' ? `!${key}` : l.op === 'in' || l.op === 'notin' ? `${key} ${l.op} (${l.values.join(',')})` : `${key}${l.op}${l.values[0]}`);
  }
  if (t.cluster) out.push(`${CLUSTER} ${t.cluster.op} (${t.cluster.values.join(',')})`);
  if (t.contains !== undefined) out.push(`search.flotilla.io/name-contains=${t.contains}`);
  if (t.prefix !== undefined) out.push(`search.flotilla.io/name-prefix=${t.prefix}`);
  if (t.after !== undefined) out.push(`search.flotilla.io/created-after=${t.after}`);
  if (t.before !== undefined) out.push(`search.flotilla.io/created-before=${t.before}`);
  const o = t.owner;
  if (o?.uid !== undefined) out.push(`search.flotilla.io/owner-uid=${o.uid}`);
  if (o?.kind !== undefined) out.push(`search.flotilla.io/owner-kind=${o.kind}`, `search.flotilla.io/owner-name=${o.name}`);
  if (o?.depth !== undefined) out.push(`search.flotilla.io/owner-depth=${o.depth}`);
  return out.join(',');
}

/** How many levels an owner term follows at most (docs/search-owners.md, "Depth"). */
const MAX_OWNER_DEPTH = 8;

/**
 * The keys of `all` the terms select, sorted. Owners and the objects between an owner and what it
 * owns are looked for in `population` (every cached kind's objects, with their kinds): an owner is
 * in the member and namespace of what it owns.
 */
export function bruteForce(all: readonly Listed[], t: Terms, labels: FleetLabels, population: readonly Listed[] = all): string[] {
  const owners = t.owner ? ownersNamed(population, t.owner) : undefined;
  return all.filter((item) => {
    const { cluster, o } = item;
    const own = labels[cluster] ?? {};
    const l = t.clusterLabel;
    if (l) {
      const has = l.key in own;
      const v = own[l.key];
      const ok = l.op === '=' ? v === l.values[0] : l.op === '!=' ? v !== l.values[0] : l.op === 'in' ? has && l.values.includes(v!) : l.op === 'notin' ? !has || !l.values.includes(v!) : l.op === 'exists' ? has : !has;
      if (!ok) return false;
    }
    if (t.cluster && (t.cluster.op === 'in') !== t.cluster.values.includes(cluster)) return false;
    const name = o.metadata.name.toLowerCase();
    if (t.contains !== undefined && !name.includes(t.contains.toLowerCase())) return false;
    if (t.prefix !== undefined && !name.startsWith(t.prefix.toLowerCase())) return false;
    const created = Date.parse(o.metadata.creationTimestamp) / 1000;
    if (t.after !== undefined && created < t.after) return false;
    if (t.before !== undefined && created >= t.before) return false;
    if (owners && !ownedBy(item, owners, t.owner!.depth ?? MAX_OWNER_DEPTH, population)) return false;
    return true;
  }).map(({ cluster, o }) => keyOf(cluster, o)).sort();
}

/** The objects an owner term names: by uid, or by Kind and name. */
function ownersNamed(population: readonly Listed[], owner: NonNullable<Terms['owner']>): Listed[] {
  return population.filter(({ kind, o }) => (owner.uid !== undefined ? o.metadata.uid === owner.uid : kind === owner.kind && o.metadata.name === owner.name));
}

/** Whether one of `owners` (in the item's member and namespace) is reached within `depth` levels up its ownerReferences. */
function ownedBy(item: Listed, owners: readonly Listed[], depth: number, population: readonly Listed[]): boolean {
  const here = (x: Listed) => x.cluster === item.cluster && x.o.metadata.namespace === item.o.metadata.namespace;
  const ownerUids = new Set(owners.filter(here).map((x) => x.o.metadata.uid));
  if (ownerUids.size === 0) return false;
  const seen = new Set<string>();
  let level: Listed[] = [item];
  for (let d = 1; d <= depth && level.length > 0; d++) {
    const refs = level.flatMap((x) => x.o.metadata.ownerReferences ?? []);
    if (refs.some((r) => ownerUids.has(r.uid))) return true;
    level = refs.filter((r) => !seen.has(r.uid) && seen.add(r.uid))
      .flatMap((r) => population.filter((x) => here(x) && x.kind === r.kind && x.o.metadata.uid === r.uid));
  }
  return false;
}

/** Every member's own objects of a list path (`/api/v1/namespaces/x/pods`), tagged with `kind` when given. */
export async function membersOwn(members: readonly MemberInfo[], path: string, kind?: string): Promise<Listed[]> {
  const lists = await Promise.all(members.map(async (m) => {
    const res = await memberRequest(m, 'GET', path);
    if (res.status !== 200) throw new Error(`${m.name}: GET ${path}: ${res.status} ${res.body.slice(0, 300)}`);
    return (JSON.parse(res.body) as { items: Obj[] }).items.map((o) => ({ cluster: m.name, ...(kind ? { kind } : {}), o }));
  }));
  return lists.flat();
}

/** A list through flotilla, every page of it (`limit` per page when given), as sorted keys; the status of a page that failed. */
export async function listedKeys(ep: MemberEndpoint, path: string, opts: { selector?: string; limit?: number; token?: string } = {}): Promise<{ status: number; items: string[]; pages: number }> {
  const keys: string[] = [];
  let cont = '';
  let pages = 0;
  do {
    const query = [
      ...(opts.selector !== undefined ? [`labelSelector=${encodeURIComponent(opts.selector)}`] : []),
      ...(opts.limit !== undefined ? [`limit=${opts.limit}`] : []),
      ...(cont ? [`continue=${encodeURIComponent(cont)}`] : []),
    ].join('&');
    const res = await memberRequest(ep, 'GET', query ? `${path}?${query}` : path, undefined, opts.token ? { token: opts.token } : {});
    if (res.status !== 200) return { status: res.status, items: [res.body], pages };
    const doc = JSON.parse(res.body) as { metadata: { continue?: string }; items: Obj[] };
    keys.push(...doc.items.map(flotillaKey));
    cont = doc.metadata.continue ?? '';
    pages++;
  } while (cont);
  return { status: 200, items: keys.sort(), pages };
}
