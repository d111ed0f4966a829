import { afterEach, describe, expect, it } from 'vitest';
import { open } from 'lmdb';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KEY_SEP, Store, type Change, type ChangeType } from '../../../src/store/store.js';
import { NAME_GENERATED_KEY, NAME_PAIR_KEY, NAME_TOKEN_KEY, isIndexed, isWord, nameEntries } from '../../../src/store/name-index.js';
import { decodeObject } from '../../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';
import { planPage } from '../../../src/mux/list-plan.js';
import { SnapshotRegistry } from '../../../src/mux/snapshots.js';
import { decodeContinue } from '../../../src/api/continue-token.js';
import type { CachedResource } from '../../../src/cacher/cache-roles.js';
import { buildReadView } from '../../../src/view/steps.js';
import { nameLookups } from '../../../src/view/step-search.js';
import { Tenant } from '../../../src/tenancy/tenant.js';
import type { ObjectNaming } from '../../../src/tenancy/naming-direction.js';
import type { ViewRequest } from '../../../src/view/view-step.js';

/** The name index (store/name-index.ts): kept in step with the objects, and a list through it answers as a scan does. */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function newDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-names-'));
  dirs.push(dir);
  return dir;
}

const PODS = 'v1/pods';
const info = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: [], categories: [], memberVerbs: [] };
const pods: CachedResource = { info, clusters: ['east', 'west'] };

function pod(cluster: string, namespace: string, name: string, type: ChangeType = 'ADDED', labels: Record<string, string> = {}): Change {
  const o = viewObjects(encodeObjects([decodeObject({ metadata: { namespace, name, uid: `${cluster}-${namespace}-${name}`, resourceVersion: '5', labels } }, { cluster, apiVersion: 'v1', kind: 'Pod', dropManagedFields: true })]))[0]!;
  return { type, rv: '5', ...o };
}

/** Who holds a word in their name, as `<namespace>/<name>@<cluster>`. */
function holders(store: Store, word: string): string[] {
  return [...store.keysLabelled(PODS, NAME_TOKEN_KEY, word)].map((k) => {
    const [, ns, name, cluster] = k.split(KEY_SEP);
    return `${ns}/${name}@${cluster}`;
  });
}

/** Every page of a list through the view, `limit` at a time, from one snapshot: the keys of what it served. */
function listed(store: Store, snapshots: SnapshotRegistry, req: Partial<ViewRequest>, limit: number, between?: () => void): string[] {
  const view = buildReadView({ resource: pods, watching: false, ...req });
  const keys: string[] = [];
  let continueToken: ReturnType<typeof decodeContinue> | undefined;
  for (;;) {
    const page = planPage(store, { resource: pods, view, limit, snapshots, caller: 'c', ...(continueToken ? { continueToken } : {}) });
    keys.push(...page.entries.map((e) => e.key));
    if (page.last) return keys;
    const meta = JSON.parse(`{${page.listMeta}}`) as { continue: string };
    continueToken = decodeContinue(meta.continue);
    between?.();
  }
}

/** A name's indexed tokens: those entered per object, then its generated places' tokens. */
function nameTokens(name: string): string[] {
  const { tokens, places } = nameEntries(name);
  return [...tokens, ...places.filter((p) => p.kind === 'generated').map((p) => p.value)];
}

const NAMES = [
  'checkout-7d9f8b6c5d-x2k4q', 'checkout-7d9f8b6c5d-bz5wq', 'checkout-worker-5c9d-zzkq2', 'Ledger-Reconciler-64bd-9qx2k', 'ledger-8f7c4-kkq2m',
  'api-gateway-6b8c-2lqqw', 'web.frontend-1', 'web-2', 'backup-28391234-jx5zq', 'k8s-sidecar', 'Ärger-bot', 'système-a', 'x', 'reconcile',
  'checkout-7d9f8b6c5d9-q8x2z', 'İx-web-7d9f8b', '7d9f8b6c5d-web', 'ledger-7d9f8b6c5d-rrr', 'ledger-4x7d9f8b6c5d2-m', 'web-q7d9f8b6c5d',
];

async function filled(dir = newDir()): Promise<Store> {
  const store = Store.open(dir);
  for (const cluster of ['east', 'west']) {
    await store.commit({ cluster, resource: PODS }, ['shop', 'tools'].flatMap((ns) => NAMES.map((n) => pod(cluster, ns, n))), { rv: '5' }, { log: false, fresh: true });
  }
  return store;
}

/** What a scan would answer: every stored key whose name meets the terms, in key order. */
function bruteForce(store: Store, contains: string[], prefixes: string[]): string[] {
  return [...store.entries(PODS)]
    .filter((e) => contains.every((c) => e.name.toLowerCase().includes(c.toLowerCase())) && prefixes.every((p) => e.name.toLowerCase().startsWith(p.toLowerCase())))
    .map((e) => e.key);
}

/** The terms as query parameters give them (lower-cased by the parser): any text, not only what a label value may hold. */
const terms = (contains: string[], prefixes: string[]): Partial<ViewRequest> => ({
  search: { clusterNames: [], clusterLabels: [], nameContains: contains.map((c) => c.toLowerCase()), namePrefixes: prefixes.map((p) => p.toLowerCase()) },
});
const selector = (contains: string[], prefixes: string[]) => terms(contains, prefixes);

// Needles of every kind: words, inside words, across tokens, generated parts, numbers, separators at either end.
const NEEDLES: [string[], string[]][] = [
  [['checkout'], []], [['CHECK'], []], [['kout'], []], [['concil'], []], [['ledger-rec'], []], [['er-rec'], []], [['eckout-7d9'], []],
  [['7d9f'], []], [['x2k4q'], []], [['2839'], []], [['-worker-'], []], [['.front'], []], [['web'], []], [['e'], []], [['a'], []],
  [[], ['check']], [[], ['checkout-w']], [[], ['ledger-']], [[], ['k8s']], [[], ['web.f']], [['zz'], []], [['gateway'], ['api']],
  [['reconcile'], []], [['er-bot'], []], [['steme'], []], [['nothing'], []],
  // Generated tokens of six characters or more, whole, started and inside; pairs with a word first.
  [['7d9f8b'], []], [['9f8b6c5d'], []], [['f8b6c5d-x2'], []], [['8391234'], []], [['391234-jx'], []], [['checkout-7d9f8b6c5d-x2k4q'], []],
  [[], ['ledger-r']], [[], ['ledger-8']], [['dger-reco'], []], [['reconciler-6'], []], [['kout-w'], []], [['ledger-'], []], [[], ['checkout-']],
  [['x-web-7d'], []], [['web-7d9f8b'], []], [[], ['7d9f8b6c5d-w']], [['7d9f8b6c5d'], []], [['out-7d9f8b6c5d-'], []],
  // One character into a generated token (no inside entry), and a word with the long generated token after it (no pair entry).
  [['d9f8b6c5d'], []], [['d9f8b6'], []], [[], ['checkout-7d9f8b']], [['kout-7d9f8b6c5d'], []], [['checkout-7d9f8b6c5d-'], []], [['web-2'], []],
];

describe('name index', () => {
  it('splits names into indexed tokens (words, and generated ones of six characters or more), per object or at their stems', () => {
    expect(nameTokens('Checkout-7d9f8b6c5d-x2k4q')).toEqual(['checkout', '7d9f8b6c5d']);
    expect(nameTokens('ledger-reconciler.ledger:v2')).toEqual(['ledger', 'reconciler']);
    expect(nameTokens('backup-28391234-jx5zq')).toEqual(['backup', '28391234']);
    expect(nameTokens('-web--2-')).toEqual(['web']);
    // Per object: the words, and a long generated token before the first word; the rest at their stems, under the first word.
    expect(nameEntries('Checkout-7d9f8b6c5d-x2k4q')).toEqual({
      tokens: ['checkout'],
      // No pair for a word and a long generated token: the token's place has the word before it.
      places: [{ kind: 'generated', value: '7d9f8b6c5d', anchor: 'checkout', stem: 'Checkout-7d9f8b6c5d' }],
    });
    expect(nameEntries('7d9f8b6c5d-web.2').tokens).toEqual(['7d9f8b6c5d', 'web']);
    expect(nameEntries('ledger-reconciler.ledger:v2').places.map((p) => [p.value, p.stem])).toEqual([
      ['ledger-reconciler', 'ledger-reconciler'], ['reconciler-ledger', 'ledger-reconciler.ledger'], ['ledger-v2', 'ledger-reconciler.ledger:v2'],
    ]);
    expect(nameEntries('x2k4q-2839')).toEqual({ tokens: [], places: [] });
    // Where lower-casing moves characters, a place is the whole name.
    expect(new Set(nameEntries('İx-web-7d9f8b').places.map((p) => p.stem))).toEqual(new Set(['İx-web-7d9f8b']));
    expect(isWord('7d9f8b6c5d')).toBe(false);
    expect(isWord('bcdfghjklmnpqrstvwxz2456789')).toBe(false);
    expect(isIndexed('7d9f8b', false)).toBe(true);
    expect(isIndexed('7d9f8b')).toBe(false);
    expect(isIndexed('7d9f8b6c5')).toBe(true);
    expect(isIndexed('x2k4q')).toBe(false);
  });

  it('enters each object under its words, and follows creations, deletions, modifications and relabels', async () => {
    const store = Store.open(newDir());
    const scope = { cluster: 'east', resource: PODS };
    await store.commit(scope, [pod('east', 'shop', 'checkout-abc'), pod('east', 'shop', 'checkout-worker-x'), pod('east', 'tools', 'ledger-1')], { rv: '5' }, { log: false, fresh: true });
    expect(holders(store, 'checkout')).toEqual(['shop/checkout-abc@east', 'shop/checkout-worker-x@east']);
    expect(holders(store, 'worker')).toEqual(['shop/checkout-worker-x@east']);
    // 'abc' has a vowel: a word; '1' is not.
    expect(holders(store, 'abc')).toEqual(['shop/checkout-abc@east']);
    expect(holders(store, '1')).toEqual([]);

    // A relabel and a modification leave the name's entries alone; a deletion removes them; a creation in a logged commit adds.
    await store.commit(scope, [pod('east', 'shop', 'checkout-abc', 'MODIFIED', { app: 'new' }), pod('east', 'shop', 'checkout-worker-x', 'DELETED'), pod('east', 'shop', 'payments-2')], { rv: '6' }, { log: true });
    expect(holders(store, 'checkout')).toEqual(['shop/checkout-abc@east']);
    expect(holders(store, 'worker')).toEqual([]);
    expect(holders(store, 'payments')).toEqual(['shop/payments-2@east']);
    // A MODIFIED of an object the store did not hold brings it in.
    await store.commit(scope, [pod('east', 'tools', 'late-arrival', 'MODIFIED')], { rv: '7' }, { log: true });
    expect(holders(store, 'arrival')).toEqual(['tools/late-arrival@east']);

    // Words found by their start and from inside; a word no object holds any more is gone from both after the next transaction.
    expect(store.nameTokens(PODS, 'work', 'prefixed', 10)).toEqual([]);
    expect(store.nameTokens(PODS, 'ments', 'containing', 10)).toEqual(['payments']);
    expect(store.nameTokens(PODS, 'orker', 'containing', 10)).toEqual([]);
    expect(store.nameTokens(PODS, 'e', 'containing', 2)).toBeUndefined();
    await store.commit(scope, [pod('east', 'shop', 'payments-2', 'DELETED')], { rv: '8' }, { log: true });
    await store.commit(scope, [pod('east', 'shop', 'unrelated-x')], { rv: '9' }, { log: true });
    expect(store.nameTokens(PODS, 'ments', 'containing', 10)).toEqual([]);
    // And back, in a transaction of its own.
    await store.commit(scope, [pod('east', 'shop', 'payments-3')], { rv: '10' }, { log: true });
    expect(store.nameTokens(PODS, 'ments', 'containing', 10)).toEqual(['payments']);

    // A dropped scope takes its objects' entries with it.
    await store.dropScope(scope);
    expect(holders(store, 'checkout')).toEqual([]);
    await store.close();
  });

  it('writes a place once for the objects sharing it, and removes it, and its token\'s inside entries, with the last of them', async () => {
    const dir = newDir();
    const store = Store.open(dir);
    const scope = { cluster: 'east', resource: PODS };
    const siblings = ['q2x4z', 'b5wq2', 'zzkq2'].map((s) => `checkout-7d9f8b6c5d-${s}`);
    await store.commit(scope, [...siblings.map((n) => pod('east', 'shop', n)), pod('east', 'shop', 'ledger-8f7c4b2d-kkq2m')], { rv: '5' }, { log: false, fresh: true });
    await store.commit({ cluster: 'west', resource: PODS }, [pod('west', 'shop', siblings[0]!)], { rv: '5' }, { log: false, fresh: true });
    const found = (place: Parameters<Store['nameKeys']>[1]) => store.nameKeys(PODS, place, 10)!.map((k) => k.split(KEY_SEP).slice(2).join('@'));
    expect(found({ kind: 'generated', needle: 'd9f8b6c5d', match: 'containing' })).toEqual([`${siblings[1]}@east`, `${siblings[0]}@east`, `${siblings[0]}@west`, `${siblings[2]}@east`]);
    expect(found({ kind: 'pair', first: 'out', second: '7d', match: { first: 'ending', second: 'prefixed' } })).toHaveLength(4);
    // The last sibling gone from one member, then the rest: the place stays while one holds it.
    await store.commit(scope, siblings.map((n) => pod('east', 'shop', n, 'DELETED')), { rv: '6' }, { log: true });
    await store.commit(scope, [pod('east', 'shop', 'other-1')], { rv: '7' }, { log: true });
    expect(found({ kind: 'generated', needle: 'd9f8b6c5d', match: 'containing' })).toEqual([`${siblings[0]}@west`]);
    await store.commit({ cluster: 'west', resource: PODS }, [pod('west', 'shop', siblings[0]!, 'DELETED')], { rv: '6' }, { log: true });
    await store.commit({ cluster: 'west', resource: PODS }, [pod('west', 'shop', 'other-2')], { rv: '7' }, { log: true });
    expect(found({ kind: 'generated', needle: '7d9f8b6c5d' })).toEqual([]);
    // And back: a sibling arriving later is entered again, also right after the place went with the one before it.
    await store.commit(scope, [pod('east', 'shop', siblings[2]!)], { rv: '8' }, { log: true });
    await store.commit(scope, [pod('east', 'shop', siblings[2]!, 'DELETED')], { rv: '9' }, { log: true });
    await store.commit(scope, [pod('east', 'shop', siblings[1]!)], { rv: '10' }, { log: true });
    expect(found({ kind: 'generated', needle: 'd9f8b6c5d', match: 'containing' })).toEqual([`${siblings[1]}@east`]);
    await store.commit(scope, [pod('east', 'shop', siblings[1]!, 'DELETED')], { rv: '11' }, { log: true });
    await store.commit(scope, [pod('east', 'shop', 'other-3')], { rv: '12' }, { log: true });
    await store.close();
    // Nothing of the hash is left in the index: no place, no pair, no inside entry; the other name's are.
    const raw = open({ path: dir, maxDbs: 16 });
    const keys = [...raw.openDB<Buffer, Buffer>({ name: 'labelIndex', encoding: 'binary', keyEncoding: 'binary' }).getKeys()].map((k) => k.toString('utf8'));
    await raw.close();
    const names = keys.filter((k) => k.startsWith(`${PODS}${KEY_SEP}:name`));
    expect(names.filter((k) => k.includes('7d9f8b6c5d'))).toEqual([]);
    expect(names.filter((k) => k.includes('8f7c4b2d')).map((k) => k.split(KEY_SEP)[1])).toEqual([':name-gen=8f7c4b2d', ':name=ledger']);
  });

  it('finds a word and a generated token after it at their places, whatever else shares the token or the stem', async () => {
    const store = Store.open(newDir());
    const hash = 'r7d9f8b6c5';
    // One hash: a name without it before names with it, siblings, two separators after the stem, the token twice, a token that goes on (its own).
    const names = ['web', `web-${hash}x-q`, `web-${hash}-x2k4q`, `web-${hash}-b5wq2`, `web-${hash}.b`, `web-${hash}`, `ledger-${hash}-api-${hash}`, `api-${hash}x-q`, `api-${hash}x-${hash}`];
    for (const cluster of ['east', 'west']) {
      await store.commit({ cluster, resource: PODS }, names.map((n) => pod(cluster, 'shop', n)), { rv: '5' }, { log: false, fresh: true });
    }
    const snapshots = new SnapshotRegistry(store);
    for (const needle of ['web-r7', `web-${hash}`, `eb-${hash}-`, 'api-r7d9', `pi-${hash}`, 'ledger-r7d', `x-${hash}`, hash]) {
      expect(listed(store, snapshots, selector([needle], []), 0), needle).toEqual(bruteForce(store, [needle], []));
      expect(listed(store, snapshots, selector([], [needle]), 2), needle).toEqual(bruteForce(store, [], [needle]));
    }
    const pair = (first: string, second: string, whole = false) => store.nameKeys(PODS, { kind: 'pair', first, second, match: { first: 'whole', second: whole ? 'whole' : 'prefixed' } }, 10)?.map((k) => k.split(KEY_SEP)[2]);
    const webHash = [`web-${hash}`, `web-${hash}-b5wq2`, `web-${hash}-x2k4q`, `web-${hash}.b`];
    expect(pair('web', hash, true)).toEqual(webHash.flatMap((n) => [n, n]));
    expect(pair('web', 'r7')).toEqual([...webHash, `web-${hash}x-q`].flatMap((n) => [n, n]));
    // `api-r7d9f8b6c5x` is a token of its own: at its own places.
    expect(pair('api', 'r7')).toEqual([`api-${hash}x-q`, `api-${hash}x-${hash}`, `ledger-${hash}-api-${hash}`].flatMap((n) => [n, n]));
    snapshots.close();
    await store.close();
  });

  it('reads a name\'s head once for the siblings after it, in its own namespace, and again once its entries went', async () => {
    const store = Store.open(newDir());
    const scope = { cluster: 'east', resource: PODS };
    const found = (needle: string) => store.nameKeys(PODS, { kind: 'generated', needle, match: 'containing' }, 10)!.map((k) => k.split(KEY_SEP).slice(1, 3).join('/'));
    // The same head in two namespaces, one after the other: each namespace has its own places.
    await store.commit(scope, [pod('east', 'tools', 'web-6b8c7d9f2kz-b5wq2'), pod('east', 'shop', 'web-6b8c7d9f2kz-q2x4z')], { rv: '5' }, { log: false, fresh: true });
    expect(found('8c7d9f2kz')).toEqual(['shop/web-6b8c7d9f2kz-q2x4z', 'tools/web-6b8c7d9f2kz-b5wq2']);
    // A place gone while another namespace holds its token: the next sibling writes it again.
    await store.commit(scope, [pod('east', 'shop', 'web-6b8c7d9f2kz-q2x4z', 'DELETED')], { rv: '6' }, { log: true });
    await store.commit(scope, [pod('east', 'shop', 'web-6b8c7d9f2kz-zzkq2')], { rv: '7' }, { log: true });
    expect(found('8c7d9f2kz')).toEqual(['shop/web-6b8c7d9f2kz-zzkq2', 'tools/web-6b8c7d9f2kz-b5wq2']);
    // A token entered per object (no word before it), gone with its inside entries and no place: the next sibling writes them again.
    await store.commit(scope, [pod('east', 'shop', '7d9f8b6c5xz-ddddd')], { rv: '8' }, { log: true });
    await store.commit(scope, [pod('east', 'shop', '7d9f8b6c5xz-ddddd', 'DELETED')], { rv: '9' }, { log: true });
    await store.commit(scope, [pod('east', 'shop', '7d9f8b6c5xz-fffff')], { rv: '10' }, { log: true });
    expect(found('9f8b6c5xz')).toEqual(['shop/7d9f8b6c5xz-fffff']);
    await store.close();
  });

  it('answers every search as a scan does, paged from one snapshot, in key order', async () => {
    const store = await filled();
    const snapshots = new SnapshotRegistry(store);
    for (const [contains, prefixes] of NEEDLES) {
      const want = bruteForce(store, contains, prefixes);
      for (const limit of [0, 3]) expect(listed(store, snapshots, selector(contains, prefixes), limit), `${JSON.stringify([contains, prefixes])} limit ${limit}`).toEqual(want);
    }
    // With other view steps beside it: one member, one namespace, a label requirement.
    expect(listed(store, snapshots, { ...selector(['checkout'], []), cluster: 'west', namespace: 'tools' }, 2)).toEqual(bruteForce(store, ['checkout'], []).filter((k) => k.includes(`${KEY_SEP}tools${KEY_SEP}`) && k.endsWith(`${KEY_SEP}west`)));
    snapshots.close();
    await store.close();
  });

  it('serves the later pages of a list from its first page’s snapshot while objects come and go', async () => {
    const store = await filled();
    const snapshots = new SnapshotRegistry(store);
    const want = bruteForce(store, ['checkout'], []);
    let changed = false;
    const changes = async () => {
      await store.commit({ cluster: 'west', resource: PODS }, [pod('west', 'tools', 'checkout-7d9f8b6c5d-x2k4q', 'DELETED'), pod('west', 'tools', 'checkout-new')], { rv: '6' }, { log: true });
    };
    let pending: Promise<void> | undefined;
    const keys = listed(store, snapshots, selector(['checkout'], []), 2, () => {
      if (!changed) pending = changes();
      changed = true;
    });
    await pending;
    expect(keys).toEqual(want);
    // A new list sees the change.
    expect(listed(store, snapshots, selector(['checkout'], []), 0)).toEqual(bruteForce(store, ['checkout'], []));
    snapshots.close();
    await store.close();
  });

  it('keeps its entries through a warm restart, and goes on from them', async () => {
    const dir = newDir();
    const first = await filled(dir);
    const before = holders(first, 'ledger');
    await first.close();
    const again = Store.open(dir);
    expect(again.health().rebuilt).toBeFalsy();
    expect(holders(again, 'ledger')).toEqual(before);
    expect(again.nameTokens(PODS, 'concil', 'containing', 10)).toEqual(['reconcile', 'reconciler']);
    // A deletion after the restart removes what the previous run entered; the last holder of a word takes its inside entries along.
    await again.commit({ cluster: 'east', resource: PODS }, ['shop', 'tools'].map((ns) => pod('east', ns, 'Ledger-Reconciler-64bd-9qx2k', 'DELETED')), { rv: '6' }, { log: true });
    await again.commit({ cluster: 'west', resource: PODS }, ['shop', 'tools'].map((ns) => pod('west', ns, 'Ledger-Reconciler-64bd-9qx2k', 'DELETED')), { rv: '6' }, { log: true });
    await again.commit({ cluster: 'west', resource: PODS }, [pod('west', 'shop', 'other-1')], { rv: '7' }, { log: true });
    expect(again.nameTokens(PODS, 'concil', 'containing', 10)).toEqual(['reconcile']);
    const snapshots = new SnapshotRegistry(again);
    for (const [contains, prefixes] of NEEDLES) expect(listed(again, snapshots, selector(contains, prefixes), 0)).toEqual(bruteForce(again, contains, prefixes));
    snapshots.close();
    await again.close();
  });

  it('narrows by the tokens and pairs a term must hold, never by a piece the index leaves out', () => {
    const token = (values: string, match?: 'prefixed' | 'containing') => ({ key: NAME_TOKEN_KEY, values: [values], ...(match ? { match } : {}) });
    const generated = (needle: string, match?: 'prefixed' | 'containing') => ({ key: NAME_GENERATED_KEY, values: [needle], place: { kind: 'generated', needle, ...(match ? { match } : {}) } });
    const pair = (first: string, second: string, match: { first: 'whole' | 'ending'; second: 'whole' | 'prefixed' }) => ({ key: NAME_PAIR_KEY, values: [first, second], place: { kind: 'pair', first, second, match } });
    expect(nameLookups(['ledger-rec'], [])).toEqual([pair('ledger', 'rec', { first: 'ending', second: 'prefixed' }), token('rec', 'prefixed'), token('ledger', 'containing')]);
    expect(nameLookups(['x-ledger-rec'], [])).toEqual([pair('ledger', 'rec', { first: 'whole', second: 'prefixed' }), token('ledger'), token('rec', 'prefixed')]);
    expect(nameLookups(['concil'], [])).toEqual([token('concil', 'containing')]);
    expect(nameLookups([], ['check'])).toEqual([token('check', 'prefixed')]);
    expect(nameLookups([], ['ledger-r'])).toEqual([pair('ledger', 'r', { first: 'whole', second: 'prefixed' }), token('ledger')]);
    expect(nameLookups(['x2k4q'], [])).toEqual([]);
    expect(nameLookups(['7d9f8b6c5'], [])).toEqual([generated('7d9f8b6c5', 'containing')]);
    // Shorter generated text: where a token starts only.
    expect(nameLookups(['7d9f8b6c'], [])).toEqual([]);
    expect(nameLookups([], ['7d9f8b'])).toEqual([generated('7d9f8b', 'prefixed')]);
    expect(nameLookups(['checkout-7d9f8b6c5d-x2'], [])).toEqual([pair('checkout', '7d9f8b6c5d', { first: 'ending', second: 'whole' }), generated('7d9f8b6c5d'), token('checkout', 'containing')]);
    expect(nameLookups(['ab-eb-ib-ob-ub-yb'], [])).toHaveLength(3);
  });

  it('matches a tenant’s names as it is shown them: its prefix may be a candidate, never an answer', async () => {
    const store = Store.open(newDir());
    const nsInfo = { ...info, resource: 'namespaces', kind: 'Namespace', namespaced: false };
    const namespaces: CachedResource = { info: nsInfo, clusters: ['east'] };
    const ns = (name: string): Change => {
      const o = viewObjects(encodeObjects([decodeObject({ metadata: { name, uid: name, resourceVersion: '5' } }, { cluster: 'east', apiVersion: 'v1', kind: 'Namespace', dropManagedFields: true })]))[0]!;
      return { type: 'ADDED', rv: '5', ...o };
    };
    await store.commit({ cluster: 'east', resource: 'v1/namespaces' }, [ns('acme-web'), ns('acme-acme-tools'), ns('acme-ledger'), ns('globex-acme')], { rv: '5' }, { log: false, fresh: true });
    const tenant = new Tenant({ id: 'acme', users: [], groups: [], clusterScoped: {} });
    const naming = { tenant, kinds: () => undefined, memberGroups: () => false } as ObjectNaming;
    const snapshots = new SnapshotRegistry(store);
    const names = (labelSelector: string) => {
      const view = buildReadView({ resource: namespaces, watching: false, tenant: naming, labelSelector });
      return planPage(store, { resource: namespaces, view, snapshots, caller: 'c' }).entries.map((e) => e.name);
    };
    expect(names('search.flotilla.io/name-contains=acme')).toEqual(['acme-acme-tools']);
    expect(names('search.flotilla.io/name-prefix=acme')).toEqual(['acme-acme-tools']);
    expect(names('search.flotilla.io/name-prefix=ledg')).toEqual(['acme-ledger']);
    expect(names('search.flotilla.io/name-prefix=web')).toEqual(['acme-web']);
    snapshots.close();
    await store.close();
  });
});
