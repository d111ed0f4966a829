import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { startFleet, type Fleet, type MemberInfo } from '../fleet/fleet.js';
import { memberJson, memberRequest, type MemberEndpoint } from '../fleet/http.js';
import { startFlotillaProcess, writeProxyKubeconfig, type FlotillaProcess } from '../support/flotilla-process.js';
import { startRoundRobinFront, type RoundRobinFront } from '../support/round-robin-front.js';
import { openWatch, type OpenWatch, type WatchEvent } from '../support/watch-client.js';
import { clientsDir, startInformer } from '../support/informer.js';
import { kubectlSession } from '../support/kubectl.js';
import { decodeGlobalRV } from '../../src/api/global-rv.js';

/**
 * Two flotilla replicas over the same two members, each with its own store, started apart (so
 * their event logs start at different member RVs) while the members' etcd revisions move (leases
 * written meanwhile). A resourceVersion one replica issued must resume on the other: no 410 the
 * member would not give (the other's log starts later, but the member holds nothing in between),
 * no 504 (the other has not seen a bookmark that far, but the member holds nothing in between).
 * Then clients behind a round-robin front, cut again and again under writes, see each write once
 * and never list again.
 */
const NAMES = ['north', 'west'];
const CONFIGMAPS = '/api/v1/configmaps';
const QUIET_NS = 'quiet';
const MOVING_NS = 'moving';
let fleet: Fleet;
const replicas: FlotillaProcess[] = [];
let front: RoundRobinFront;
let firstRV: string;

const member = (name: string): MemberInfo => fleet.info.members.find((m) => m.name === name)!;
type List = { metadata: { resourceVersion: string }; items: { metadata: { name: string; namespace: string; uid: string; resourceVersion: string } }[] };

/** Writes that move a member's etcd revision without touching what flotilla caches. */
async function churnLeases(prefix: string, count: number): Promise<void> {
  for (const m of fleet.info.members) {
    for (let i = 0; i < count; i++) {
      const res = await memberRequest(m, 'POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases', { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: `${prefix}-${i}` }, spec: { holderIdentity: 'test' } });
      expect(res.status).toBe(201);
    }
  }
}

async function createConfigMap(cluster: string, namespace: string, name: string): Promise<void> {
  const res = await memberRequest(member(cluster), 'POST', `/api/v1/namespaces/${namespace}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: 'b' } });
  expect(res.status, res.body).toBe(201);
}

function replicaOptions(i: number) {
  return {
    fleet: fleet.info,
    dir: join(fleet.info.dir, `replica-${i}`),
    resources: [{ version: 'v1', resource: 'configmaps' }, { version: 'v1', resource: 'pods' }],
  };
}

beforeAll(async () => {
  fleet = await startFleet({ names: NAMES, dir: join(inject('fleet').dir, 'replicas-watch-fleet'), workloads: false });
  for (const m of fleet.info.members) {
    for (const ns of [QUIET_NS, MOVING_NS]) await memberJson(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    // No controller manager here: the pods' service account is made by hand.
    await memberJson(m, 'POST', `/api/v1/namespaces/${MOVING_NS}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } });
    await createConfigMap(m.name, QUIET_NS, 'settled');
  }
  replicas.push(await startFlotillaProcess(replicaOptions(1)));
  // The RV a client holds from replica 1 before replica 2 exists.
  firstRV = (await memberJson<List>(replicas[0]!.endpoint, 'GET', CONFIGMAPS)).metadata.resourceVersion;
  await churnLeases('between', 5);
  replicas.push(await startFlotillaProcess(replicaOptions(2)));
  front = await startRoundRobinFront(replicas.map((r) => Number(new URL(r.url).port)));
}, 240_000);

afterAll(async () => {
  await front?.close();
  for (const r of replicas) await r.stop();
  await fleet?.stop();
});

const errors = (w: OpenWatch) => w.events.filter((e) => e.type === 'ERROR');
const addedNames = (events: WatchEvent[]) => events.filter((e) => e.type === 'ADDED').map((e) => e.object.metadata?.name);

describe('a resourceVersion one replica issued, on the other', () => {
  it('a watch of a quiet resource resumed on a replica whose event log starts later: no 410', async () => {
    const r2 = replicas[1]!;
    const secondRV = (await memberJson<List>(r2.endpoint, 'GET', CONFIGMAPS)).metadata.resourceVersion;
    // The replicas' RVs of the quiet configmaps differ: each is where its own list stood.
    for (const c of NAMES) expect(BigInt(decodeGlobalRV(secondRV)[c]!)).toBeGreaterThan(BigInt(decodeGlobalRV(firstRV)[c]!));
    // What the members say from replica 1's RVs: they hold the history.
    for (const c of NAMES) {
      const own = await openWatch(member(c), `${CONFIGMAPS}?watch=1&resourceVersion=${decodeGlobalRV(firstRV)[c]}&timeoutSeconds=2`);
      await own.ended;
      expect(own.status).toBe(200);
      expect(errors(own)).toEqual([]);
    }
    const watch = await openWatch(r2.endpoint, `${CONFIGMAPS}?watch=1&resourceVersion=${encodeURIComponent(firstRV)}`);
    try {
      expect(watch.status).toBe(200);
      await createConfigMap('north', QUIET_NS, 'after-resume');
      await watch.until((events) => addedNames(events).includes('after-resume') || events.some((e) => e.type === 'ERROR'));
      expect(errors(watch)).toEqual([]);
      expect(addedNames(watch.events)).toEqual(['after-resume']);
    } finally {
      watch.close();
    }
  }, 60_000);

  it('a list and a watch from an RV the other replica got from a later list: served at once, no 504', async () => {
    const [r1, r2] = replicas as [FlotillaProcess, FlotillaProcess];
    await churnLeases('later', 5);
    // west stays quiet; replica 2 listed it after replica 1 did (and after the leases moved). Both
    // as their caches stand (resourceVersion=0): a fresh read would confirm with west first.
    const ahead = (await memberJson<List>(r2.endpoint, 'GET', `${CONFIGMAPS}?labelSelector=none%3Dnone&resourceVersion=0`)).metadata.resourceVersion;
    const behind = (await memberJson<List>(r1.endpoint, 'GET', `${CONFIGMAPS}?labelSelector=none%3Dnone&resourceVersion=0`)).metadata.resourceVersion;
    expect(BigInt(decodeGlobalRV(ahead).west!)).toBeGreaterThan(BigInt(decodeGlobalRV(behind).west!));
    // The member itself serves a list at that RV at once.
    const own = await memberRequest(member('west'), 'GET', `${CONFIGMAPS}?resourceVersion=${decodeGlobalRV(ahead).west}`);
    expect(own.status).toBe(200);

    const started = Date.now();
    const list = await memberRequest(r1.endpoint, 'GET', `${CONFIGMAPS}?resourceVersion=${encodeURIComponent(ahead)}`);
    const listMs = Date.now() - started;
    expect(list.status, list.body).toBe(200);
    const names = (JSON.parse(list.body) as List).items.filter((i) => i.metadata.namespace === QUIET_NS).map((i) => i.metadata.name);
    expect(names.sort()).toEqual(['after-resume', 'settled', 'settled']);
    const watchStarted = Date.now();
    const watch = await openWatch(r1.endpoint, `${CONFIGMAPS}?watch=1&resourceVersion=${encodeURIComponent(ahead)}`);
    const watchMs = Date.now() - watchStarted;
    try {
      expect(watch.status).toBe(200);
      await createConfigMap('west', QUIET_NS, 'after-ahead');
      await watch.until((events) => addedNames(events).includes('after-ahead') || events.some((e) => e.type === 'ERROR'));
      expect(errors(watch)).toEqual([]);
      expect(addedNames(watch.events)).toEqual(['after-ahead']);
    } finally {
      watch.close();
    }
    console.log(`replica 1 served an RV replica 2 issued: list in ${listMs} ms, watch answered in ${watchMs} ms`);
    // Served before the 3 s a read waits for its cache (RESOURCE_VERSION_WAIT_MS): the member's
    // bookmark comes 1 to 2.25 s into its 3 s watch; the watch after it finds the scope raised.
    expect(listMs).toBeLessThan(2900);
    expect(watchMs).toBeLessThan(500);
  }, 60_000);
});

describe('clients behind a round-robin front, cut under writes', () => {
  it('a resuming watch and a client-go informer see every write once and never list again', async () => {
    const kubeconfig = join(fleet.info.dir, 'front-kubeconfig');
    writeProxyKubeconfig(kubeconfig, front.url, fleet.info.caFile, fleet.info.members[0]!.token);
    const bin = join(clientsDir(), 'informer');
    const informer = startInformer({ bin, kubeconfig, mode: 'informer', watchList: false, namespace: MOVING_NS });
    const frontEndpoint: MemberEndpoint = { server: front.url, token: fleet.info.members[0]!.token, caFile: fleet.info.caFile };
    // A watch that resumes from the last RV it got, as a reflector does, through the front.
    const seen: WatchEvent[] = [];
    let rv = (await memberJson<List>(frontEndpoint, 'GET', `/api/v1/namespaces/${MOVING_NS}/pods`)).metadata.resourceVersion;
    let stopped = false;
    let stop!: () => void;
    const stopping = new Promise<void>((r) => (stop = r));
    const resumeFailures: string[] = [];
    const resuming = (async () => {
      while (!stopped && resumeFailures.length === 0) {
        const w = await openWatch(frontEndpoint, `/api/v1/namespaces/${MOVING_NS}/pods?watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(rv)}`).catch(() => undefined);
        if (!w) {
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        if (w.status !== 200) resumeFailures.push(`HTTP ${w.status}`);
        await Promise.race([w.ended, stopping]);
        w.close();
        for (const e of w.events) {
          if (e.type === 'ERROR') resumeFailures.push(JSON.stringify(e.object).slice(0, 300));
          else {
            if (e.type !== 'BOOKMARK') seen.push(e);
            rv = e.object.metadata!.resourceVersion!;
          }
        }
      }
    })();
    const kubectlWatch = kubectlSession(kubeconfig, ['get', 'pods', '-n', MOVING_NS, '-w', '--output-watch-events', '-o', 'custom-columns=EVENT:.type,NAME:.object.metadata.name', '--no-headers']);
    try {
      await informer.synced;
      // kubectl's first list is a fresh read: it confirms with west, whose pods are quiet (about a
      // second); its watch must be open before the front starts cutting connections.
      await new Promise((r) => setTimeout(r, 3000));
      const written: string[] = [];
      for (let round = 0; round < 6; round++) {
        for (let i = 0; i < 5; i++) {
          const name = `p-${round}-${i}`;
          // north only: west stays quiet, so the RVs clients carry hold west as each replica saw it.
          const res = await memberRequest(member('north'), 'POST', `/api/v1/namespaces/${MOVING_NS}/pods`, {
            apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { automountServiceAccountToken: false, containers: [{ name: 'c', image: 'busybox' }] },
          });
          expect(res.status, res.body).toBe(201);
          written.push(name);
        }
        await new Promise((r) => setTimeout(r, 700));
        front.cut();
        await new Promise((r) => setTimeout(r, 300));
      }
      const deadline = Date.now() + 30_000;
      while (addedNames(seen).length < written.length && resumeFailures.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      stopped = true;
      stop();
      await resuming;
      const pods = await memberJson<List>(member('north'), 'GET', `/api/v1/namespaces/${MOVING_NS}/pods`);
      const expected = pods.items.map((p) => `${MOVING_NS}/${p.metadata.name} ${p.metadata.uid} north:${p.metadata.resourceVersion}`).sort();
      // Its cache settles within the resync.
      await new Promise((r) => setTimeout(r, 2000));
      const dump = await informer.dump();
      // One list each at the start: every cut was resumed by a watch, never by a relist, on
      // whichever replica the front chose.
      expect({ informerLists: dump.lists, resumeFailures }, dump.log.slice(-2000)).toEqual({ informerLists: 1, resumeFailures: [] });
      expect(dump.watches).toBeGreaterThan(3);
      expect(dump.log).not.toMatch(/too old resource version|Too large resource version/i);
      // Each write seen once, and the caches equal the member's own list (uid, RV).
      expect(addedNames(seen).sort()).toEqual([...written].sort());
      expect(seen.filter((e) => e.type !== 'ADDED')).toEqual([]);
      expect(dump.lines).toEqual(expected);
      // kubectl get -w does not resume a watch that was cut (it ends with it): what it printed
      // until then is each write once, from whichever replica it landed on.
      const printed = kubectlWatch.stdout().split('\n').filter((l) => l.trim()).map((l) => l.trim().split(/\s+/));
      expect(printed.length).toBeGreaterThan(0);
      expect(printed.every(([type]) => type === 'ADDED')).toBe(true);
      expect(printed.map(([, name]) => name)).toEqual(written.slice(0, printed.length));
      expect(kubectlWatch.stderr()).not.toMatch(/too old resource version|Too large resource version/i);
      console.log(`kubectl get -w printed ${printed.length} events before its first cut ended it; stderr ${JSON.stringify(kubectlWatch.stderr().slice(-300))}`);
      console.log(`front connections per replica: ${JSON.stringify([...front.connections])}; informer watches ${dump.watches}, lists ${dump.lists}`);
    } finally {
      stopped = true;
      stop();
      informer.stop();
      await kubectlWatch.stop();
    }
  }, 180_000);
});
