import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { memberRequest, type MemberResponse } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { until } from '../support/poll.js';
import { apiserverPid, pause } from '../support/paused-member.js';
import { openWatch, type WatchEvent } from '../support/watch-client.js';
import { kubectl, kubectlSession } from '../support/kubectl.js';
import { decodeGlobalRV, encodeGlobalRV } from '../../src/api/global-rv.js';
import { encodeContinue } from '../../src/api/continue-token.js';
import { annotationOf, decodeProtobufAnswer, decodeWatchStream, fieldAt, listItems, type ProtoTree } from '../support/protobuf-tree.js';

/**
 * Resources flotilla does not cache (here configmaps and serviceaccounts; only pods, namespaces and
 * nodes are cached) are read live from the members, as the caller: a fleet list is every member's
 * own answer merged (cluster annotation, global RV), with selectors, Tables and paging; a get is the
 * one member's object, the first in the fleet's order when several have it; a member that refuses the caller or does not answer
 * is named in a Warning and the others still answer.
 */
const fleet = inject('fleet');
const NS = 'live-reads';
const CLUSTER = 'search.flotilla.io/cluster';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const members = fleet.members;
const [east, west, north] = members as [MemberInfo, MemberInfo, MemberInfo];
const alice = fleet.users.find((u) => u.name === 'alice')!;
const bob = fleet.users.find((u) => u.name === 'bob')!;
let flotilla: FlotillaProcess;

interface Obj {
  kind?: string;
  apiVersion?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; annotations?: Record<string, string>; managedFields?: unknown };
  [k: string]: unknown;
}
interface List {
  kind: string;
  apiVersion: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items: Obj[];
}

const ok = async (m: { server: string; token: string; caFile: string }, path: string, opts: { token?: string; accept?: string; timeoutMs?: number } = {}): Promise<MemberResponse> => {
  const res = await memberRequest(m, 'GET', path, undefined, opts);
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.body.slice(0, 300)}`);
  return res;
};
const listOf = async (m: { server: string; token: string; caFile: string }, path: string, token?: string) => JSON.parse((await ok(m, path, { token })).body) as List;
const warnings = (res: MemberResponse): string[] => {
  const w = res.headers['warning'];
  return w === undefined ? [] : Array.isArray(w) ? w : String(w).split(/,(?=\s*299 )/);
};

/** A member's object as flotilla must show it but for its RV and cluster annotation. */
function body(o: Obj): unknown {
  const { resourceVersion: _rv, annotations, ...md } = o.metadata;
  const rest = Object.fromEntries(Object.entries(annotations ?? {}).filter(([k]) => k !== CLUSTER));
  return { ...o, metadata: { ...md, ...(Object.keys(rest).length ? { annotations: rest } : {}) } };
}

/** Every member's own list (admin), merged as flotilla must merge it: by cluster, then name. */
async function membersMerged(path: string): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  for (const m of members) {
    const l = await listOf(m, path);
    // Items as the member lists them: a built-in kind's without kind and apiVersion.
    for (const o of l.items) out.set(`${m.name}/${o.metadata.namespace ?? ''}/${o.metadata.name}`, body(o));
  }
  return out;
}

function flotillaMerged(l: List): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const o of l.items) {
    const cluster = o.metadata.annotations?.[CLUSTER];
    expect(cluster, `${o.metadata.name} has its cluster annotation`).toBeDefined();
    expect(decodeGlobalRV(o.metadata.resourceVersion!)).toEqual({ [cluster!]: expect.stringMatching(/^[0-9]+$/) });
    out.set(`${cluster}/${o.metadata.namespace ?? ''}/${o.metadata.name}`, body(o));
  }
  return out;
}

// A custom resource with an int64 beyond 2^53 (as upstream's CRD watch conformance test makes):
// flotilla must send the member's digits, never a float of them.
const BIG_GROUP = 'live-reads.flotilla.test';
const BIG_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `counters.${BIG_GROUP}` },
  spec: {
    group: BIG_GROUP,
    scope: 'Cluster',
    names: { plural: 'counters', singular: 'counter', kind: 'Counter' },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { count: { type: 'integer', format: 'int64' } } } } }],
  },
};
const INT64_MAX = '9223372036854775807';

beforeAll(async () => {
  const crd = await memberRequest(east, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', BIG_CRD);
  if (crd.status !== 201 && crd.status !== 409) throw new Error(`CRD: ${crd.status} ${crd.body}`);
  await until('the CRD served by east', async () => (await memberRequest(east, 'GET', `/apis/${BIG_GROUP}/v1/counters`)).status === 200);
  const big = await memberRequest(east, 'POST', `/apis/${BIG_GROUP}/v1/counters`, `{"apiVersion":"${BIG_GROUP}/v1","kind":"Counter","metadata":{"name":"big"},"count":${INT64_MAX}}`);
  if (big.status !== 201 && big.status !== 409) throw new Error(`counter: ${big.status} ${big.body}`);
  for (const m of members) {
    const make = async (path: string, b: unknown) => {
      const res = await memberRequest(m, 'POST', path, b);
      if (res.status !== 201 && res.status !== 409) throw new Error(`POST ${path} on ${m.name}: ${res.status} ${res.body.slice(0, 300)}`);
    };
    await make('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    for (let i = 0; i < 5; i++) {
      await make(`/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${m.name}-${i}`, labels: { team: i % 2 ? 'red' : 'blue' } }, data: { k: `${m.name}-${i}` } });
    }
    if (m !== north) await make(`/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'shared' }, data: { on: m.name } });
    await make(`/api/v1/namespaces/${NS}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: `s-${m.name}` }, stringData: { a: 'b' } });
    await make(`/api/v1/namespaces/${NS}/resourcequotas`, { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: `rq-${m.name}` }, spec: { hard: { pods: '100' } } });
  }
  // alice may read (get, list, watch) configmaps of NS on west only.
  await memberRequest(west, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'cm-reader' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }] });
  await memberRequest(west, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'alice-cm' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cm-reader' }, subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }] });
  await until('the default service accounts', async () => {
    for (const m of members) if ((await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status !== 200) return false;
    return true;
  });
  flotilla = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-live-reads'), options: { liveReads: { exclude: ['resourcequotas'] } } });
});

afterAll(async () => {
  await flotilla?.stop();
  await memberRequest(east, 'DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${BIG_CRD.metadata.name}`);
  for (const m of members) await memberRequest(m, 'DELETE', `/api/v1/namespaces/${NS}`);
});

describe('a fleet-wide list of an uncached resource', () => {
  it('is every member’s own list, merged: cluster annotation, global RVs, items’ kinds as listed', async () => {
    const path = `/api/v1/namespaces/${NS}/configmaps`;
    const l = await listOf(flotilla.endpoint, path);
    expect(l.kind).toBe('ConfigMapList');
    expect(Object.keys(decodeGlobalRV(l.metadata.resourceVersion!)).sort()).toEqual(members.map((m) => m.name).sort());
    expect(l.items.every((o) => o.kind === undefined && o.apiVersion === undefined)).toBe(true);
    expect(flotillaMerged(l)).toEqual(await membersMerged(path));
    expect(l.items.length).toBeGreaterThanOrEqual(3 * 5 + 2);
  });

  it('in protobuf, for a client that takes nothing else: every member’s items, paged with limit and continue', async () => {
    const path = `/api/v1/namespaces/${NS}/configmaps`;
    const PROTOBUF = 'application/vnd.kubernetes.protobuf';
    const own = [...(await membersMerged(path)).keys()].sort();
    const named = (item: ProtoTree) => {
      const meta = fieldAt(item, 1) as ProtoTree;
      const cluster = meta.map(([no, e]) => (no === 12 && Array.isArray(e) && fieldAt(e, 1) === CLUSTER ? String(fieldAt(e, 2)) : undefined)).find((c) => c !== undefined);
      expect(decodeGlobalRV(String(fieldAt(meta, 6)))).toEqual({ [cluster!]: expect.stringMatching(/^[0-9]+$/) });
      return `${cluster}/${NS}/${String(fieldAt(meta, 1))}`;
    };
    const whole = await memberRequest(flotilla.endpoint, 'GET', path, undefined, { accept: PROTOBUF });
    expect([whole.status, whole.headers['content-type']]).toEqual([200, PROTOBUF]);
    const list = decodeProtobufAnswer(whole.raw!);
    expect(fieldAt(list, 1, 2)).toBe('ConfigMapList');
    expect(Object.keys(decodeGlobalRV(String(fieldAt(list, 2, 1, 2)))).sort()).toEqual(members.map((m) => m.name).sort());
    expect(listItems(list).map(named).sort()).toEqual(own);
    const walked: string[] = [];
    let next = '';
    let pages = 0;
    do {
      const page = await memberRequest(flotilla.endpoint, 'GET', `${path}?limit=4${next ? `&continue=${encodeURIComponent(next)}` : ''}`, undefined, { accept: PROTOBUF });
      expect(page.status, page.body).toBe(200);
      const tree = decodeProtobufAnswer(page.raw!);
      const items = listItems(tree);
      expect(items.length).toBeLessThanOrEqual(4);
      walked.push(...items.map(named));
      next = String(fieldAt(tree, 2, 1, 3) ?? '');
    } while (next !== '' && ++pages < 50);
    expect(walked.sort()).toEqual(own);
  });

  it('across namespaces (serviceaccounts), with the label and field selectors passed to the members', async () => {
    for (const path of [
      `/api/v1/serviceaccounts`,
      `/api/v1/namespaces/${NS}/configmaps?labelSelector=${encodeURIComponent('team=red')}`,
      `/api/v1/configmaps?fieldSelector=${encodeURIComponent(`metadata.name=cm-${west.name}-1`)}`,
      `/api/v1/namespaces/${NS}/configmaps?fieldSelector=${encodeURIComponent('metadata.name=shared')}`,
    ]) {
      const want = await membersMerged(path);
      expect(flotillaMerged(await listOf(flotilla.endpoint, path)), path).toEqual(want);
    }
  });

  it('as a Table: one table, the Cluster column after the name, a row per member row', async () => {
    const path = `/api/v1/namespaces/${NS}/configmaps`;
    const t = JSON.parse((await ok(flotilla.endpoint, path, { accept: TABLE })).body) as { kind: string; columnDefinitions: { name: string }[]; rows: { cells: unknown[]; object: Obj }[]; metadata: { resourceVersion: string } };
    expect(t.kind).toBe('Table');
    const own = JSON.parse((await ok(east, path, { accept: TABLE })).body) as { columnDefinitions: { name: string }[]; rows: { cells: unknown[]; object: Obj }[] };
    expect(own.columnDefinitions[0]!.name).toBe('Name');
    expect(t.columnDefinitions.map((c) => c.name)).toEqual(['Name', 'Cluster', ...own.columnDefinitions.slice(1).map((c) => c.name)]);
    // East's rows are east's own, cell for cell, but the Cluster cell; their objects too, but
    // for the global resourceVersion and the cluster annotation.
    // Age is printed at each answer's own time (a second apart may read "9s" and "10s").
    const age = own.columnDefinitions.findIndex((c) => c.name === 'Age');
    const cells = (row: unknown[]) => row.filter((_, i) => i !== age);
    const eastRows = t.rows.filter((r) => r.cells[1] === east.name);
    expect(eastRows.map((r) => cells(r.cells.filter((_, i) => i !== 1)))).toEqual(own.rows.map((r) => cells(r.cells)));
    expect(eastRows.map((r) => body(r.object))).toEqual(own.rows.map((r) => body(r.object)));
    expect(eastRows.map((r) => decodeGlobalRV(r.object.metadata.resourceVersion!)[east.name])).toEqual(own.rows.map((r) => r.object.metadata.resourceVersion));
    const rows = t.rows.map((r) => `${String(r.cells[1])}/${String(r.cells[0])}`).sort();
    const want = [...(await membersMerged(path)).keys()].map((k) => k.replace(`/${NS}/`, '/')).sort();
    expect(rows).toEqual(want);
    for (const r of t.rows) expect(r.object.metadata.annotations?.[CLUSTER]).toBe(r.cells[1]);
    expect(Object.keys(decodeGlobalRV(t.metadata.resourceVersion)).length).toBe(3);
  });

  it('as PartialObjectMetadataList: every member’s items, each PartialObjectMetadata with its cluster', async () => {
    const path = `/api/v1/namespaces/${NS}/configmaps`;
    const accept = 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io';
    const l = JSON.parse((await ok(flotilla.endpoint, path, { accept })).body) as List;
    expect(l.kind).toBe('PartialObjectMetadataList');
    const own = JSON.parse((await ok(east, path, { accept })).body) as List;
    const mine = l.items.filter((i) => i.metadata.annotations?.[CLUSTER] === east.name);
    expect(mine.map((i) => body(i))).toEqual(own.items.map((i) => body(i)));
    expect(l.items.every((i) => i.kind === 'PartialObjectMetadata' && i.data === undefined)).toBe(true);
    expect(flotillaMerged(l).size).toBe((await membersMerged(path)).size);
  });

  it('pages with limit and continue: each page within the limit, together the whole list, the remaining count right', async () => {
    const path = `/api/v1/namespaces/${NS}/configmaps`;
    const whole = await membersMerged(path);
    for (const limit of [1, 2, 4, 7]) {
      const seen = new Map<string, unknown>();
      let token: string | undefined;
      let pages = 0;
      let firstRV: string | undefined;
      do {
        const page = await listOf(flotilla.endpoint, `${path}?limit=${limit}${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
        expect(page.items.length).toBeLessThanOrEqual(limit);
        // As an apiserver: remainingItemCount only with a continue, and then exact. A page that
        // asked every member (the limit at least one per member) has it, and keeps the first
        // page's resourceVersion (a smaller limit reads some members first on a later page).
        firstRV ??= page.metadata.resourceVersion;
        if (!page.metadata.continue) expect(page.metadata.remainingItemCount).toBeUndefined();
        if (limit >= members.length) {
          expect(page.metadata.resourceVersion).toBe(firstRV);
          if (page.metadata.continue && pages === 0) expect(page.metadata.remainingItemCount).toBeDefined();
        }
        if (page.metadata.remainingItemCount !== undefined) expect(page.metadata.remainingItemCount + page.items.length + seen.size).toBe(whole.size);
        for (const [k, v] of flotillaMerged(page)) {
          expect(seen.has(k), `${k} twice`).toBe(false);
          seen.set(k, v);
        }
        token = page.metadata.continue;
        expect(++pages).toBeLessThan(100);
      } while (token);
      expect(seen, `limit ${limit}`).toEqual(whole);
    }
  });

  it('tells its continue tokens from a cached list’s (400 either way)', async () => {
    const page = await listOf(flotilla.endpoint, `/api/v1/namespaces/${NS}/configmaps?limit=2`);
    const live = page.metadata.continue!;
    expect(live).toBeTruthy();
    const cachedToken = encodeContinue({ rv: encodeGlobalRV({ [east.name]: '1' }), start: 'x' });
    expect((await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps?limit=2&continue=${cachedToken}`)).status).toBe(400);
    expect((await memberRequest(flotilla.endpoint, 'GET', `/api/v1/pods?limit=2&continue=${live}`)).status).toBe(400);
  });
});

describe('a fleet-wide get by name of an uncached resource', () => {
  it('is the one member’s object, annotated, with a global RV', async () => {
    const o = JSON.parse((await ok(flotilla.endpoint, `/api/v1/namespaces/${NS}/configmaps/cm-${west.name}-2`)).body) as Obj;
    const own = JSON.parse((await ok(west, `/api/v1/namespaces/${NS}/configmaps/cm-${west.name}-2`)).body) as Obj;
    expect(o.metadata.annotations?.[CLUSTER]).toBe(west.name);
    expect(decodeGlobalRV(o.metadata.resourceVersion!)).toEqual({ [west.name]: own.metadata.resourceVersion });
    expect(body(o)).toEqual(body(own));
  });
  it('is the first member’s copy when several have it (a Warning names them), 404 as the apiserver words it when none does', async () => {
    const several = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps/shared`);
    expect(several.status).toBe(200);
    expect((JSON.parse(several.body) as { data: { on: string } }).data.on).toBe(east.name);
    expect(String(several.headers['warning'])).toContain(`is in clusters ${east.name}, ${west.name}; this is ${east.name}'s`);
    const none = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps/nope`);
    expect(none.status).toBe(404);
    expect(JSON.parse(none.body)).toMatchObject({ kind: 'Status', reason: 'NotFound', message: 'configmaps "nope" not found', details: { name: 'nope', kind: 'configmaps' } });
  });
  it('of the status and scale subresources is the member’s, as for the object; other subresources are not fanned out', async () => {
    const deployments = `/apis/apps/v1/namespaces/${NS}/deployments`;
    const made = await memberRequest(north, 'POST', deployments, {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'scaled' },
      spec: { replicas: 0, selector: { matchLabels: { app: 'scaled' } }, template: { metadata: { labels: { app: 'scaled' } }, spec: { containers: [{ name: 'c', image: 'example.com/c:1' }] } } },
    });
    expect([201, 409]).toContain(made.status);
    for (const sub of ['scale', 'status']) {
      // The deployment controller updates a new deployment's status: compare at a quiet moment.
      let own: Obj, via: Obj;
      for (let i = 0; ; i++) {
        own = JSON.parse((await ok(north, `${deployments}/scaled/${sub}`)).body) as Obj;
        via = JSON.parse((await ok(flotilla.endpoint, `${deployments}/scaled/${sub}`)).body) as Obj;
        const after = JSON.parse((await ok(north, `${deployments}/scaled/${sub}`)).body) as Obj;
        if (after.metadata.resourceVersion === own.metadata.resourceVersion || i === 20) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(via.metadata.annotations?.[CLUSTER], sub).toBe(north.name);
      expect(decodeGlobalRV(via.metadata.resourceVersion!)).toEqual({ [north.name]: own.metadata.resourceVersion });
      expect(body(via)).toEqual(body(own));
      const elsewhere = await memberRequest(flotilla.endpoint, 'GET', `/clusters/${west.name}${deployments}/scaled/${sub}`);
      expect(elsewhere.status, sub).toBe(404);
    }
    const proxied = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/services/nope/proxy`);
    // Forwarded to the one member that has the service, asked as the caller: none has it.
    expect(proxied.status, proxied.body).toBe(404);
    expect(JSON.parse(proxied.body)).toMatchObject({ reason: 'NotFound', message: 'services "nope" not found' });
    const watched = await memberRequest(flotilla.endpoint, 'GET', `${deployments}/scaled/scale?watch=1`);
    expect(watched.status, watched.body).toBe(404);
  });
  // Upstream's CSR API test reads /approval as it reads the object: it was 404 through flotilla.
  it('of a CertificateSigningRequest’s approval is the member’s, as for the object', async () => {
    const csrs = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
    const request = readFileSync(join(fleet.dir, 'kubelet-client.csr')).toString('base64');
    const made = await memberRequest(north, 'POST', csrs, { apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name: 'live-reads-csr' }, spec: { request, signerName: 'example.com/live-reads', usages: ['digital signature'] } });
    expect([201, 409], made.body).toContain(made.status);
    const own = JSON.parse((await ok(north, `${csrs}/live-reads-csr/approval`)).body) as Obj;
    const via = JSON.parse((await ok(flotilla.endpoint, `${csrs}/live-reads-csr/approval`)).body) as Obj;
    expect(via.metadata.annotations?.[CLUSTER]).toBe(north.name);
    expect(decodeGlobalRV(via.metadata.resourceVersion!)).toEqual({ [north.name]: own.metadata.resourceVersion });
    expect(body(via)).toEqual(body(own));
    const elsewhere = await memberRequest(flotilla.endpoint, 'GET', `/clusters/${west.name}${csrs}/live-reads-csr/approval`);
    expect(elsewhere.status).toBe(404);
  });
  it('under /clusters/<name>/ is that member’s alone', async () => {
    const o = JSON.parse((await ok(flotilla.endpoint, `/clusters/${west.name}/api/v1/namespaces/${NS}/configmaps/shared`)).body) as { data: { on: string }; metadata: Obj['metadata'] };
    expect(o.data.on).toBe(west.name);
    expect(o.metadata.annotations?.[CLUSTER]).toBe(west.name);
    const l = await listOf(flotilla.endpoint, `/clusters/${north.name}/api/v1/namespaces/${NS}/configmaps`);
    expect(new Set(l.items.map((i) => i.metadata.annotations?.[CLUSTER]))).toEqual(new Set([north.name]));
  });
});

describe('kubectl', () => {
  it('1.28, 1.32 and the newest list uncached resources fleet-wide as the members do, merged', async () => {
    for (const version of ['1.28', '1.32', undefined]) {
      const via = await kubectl(flotilla.kubeconfig, ['get', 'configmaps', '-n', NS, '-o', 'name'], { version });
      expect(via.code, `${version}: ${via.stderr}`).toBe(0);
      const own = await Promise.all(members.map((m) => kubectl(m.kubeconfig, ['get', 'configmaps', '-n', NS, '-o', 'name'], { version })));
      const lines = (out: string) => out.split('\n').filter(Boolean);
      expect(lines(via.stdout).sort()).toEqual(own.flatMap((r) => lines(r.stdout)).sort());
      // Events and CRDs, which flotilla does not cache: a table with the Cluster column (first for
      // events, whose printer shows no name column by default), or none.
      const events = await kubectl(flotilla.kubeconfig, ['get', 'events', '-A'], { version });
      expect(events.code, `${version}: ${events.stderr}`).toBe(0);
      expect(events.stdout).toMatch(/^NAMESPACE\s+CLUSTER\s+LAST SEEN/);
      const crds = await kubectl(flotilla.kubeconfig, ['get', 'crd'], { version });
      expect(crds.code, `${version}: ${crds.stderr}`).toBe(0);
    }
  });

  it('1.28, 1.32 and the newest: get secrets -A -w shows every member\'s secrets, then a new one as it is made', async () => {
    /** NAMESPACE NAME TYPE DATA of the rows in NS (AGE differs from moment to moment). */
    const rows = (out: string, clusterColumn: boolean) => out.split('\n').map((l) => l.trim().split(/\s+/)).filter((c) => c[0] === NS)
      .map((c) => (clusterColumn ? [c[0], c[1], c[3], c[4], c[2]] : c.slice(0, 4)).join(' '));
    for (const version of ['1.28', '1.32', undefined]) {
      const own = await Promise.all(members.map(async (m) => {
        const r = await kubectl(m.kubeconfig, ['get', 'secrets', '-A'], { version });
        expect(r.code, r.stderr).toBe(0);
        return rows(r.stdout, false).map((row) => `${row} ${m.name}`);
      }));
      const w = kubectlSession(flotilla.kubeconfig, ['get', 'secrets', '-A', '-w', '-v=6'], { version });
      try {
        // Whole rows, to their line end: a row read while kubectl is still writing it lacks its last columns.
        await w.waitForOutput(new RegExp(`${NS}\\s+s-${north.name}\\s+${north.name}\\s.*\\n`));
        await w.waitForOutput(new RegExp(`${NS}\\s+s-${east.name}\\s+${east.name}\\s.*\\n`));
        expect(w.stdout()).toMatch(/^NAMESPACE\s+NAME\s+CLUSTER\s+TYPE\s+DATA\s+AGE/);
        expect(rows(w.stdout(), true).sort()).toEqual(own.flat().sort());
        const name = `s-new-${version ?? 'newest'}`.replace('.', '-');
        const made = await memberRequest(west, 'POST', `/api/v1/namespaces/${NS}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { a: 'b', c: 'd' } });
        expect(made.status, made.body).toBe(201);
        await w.waitForOutput(new RegExp(`${NS}\\s+${name}\\s+${west.name}\\s+Opaque\\s+2\\s`));
        // kubectl's own log: one list, then a watch from its RV, that stays open (no relist, no error).
        await new Promise((r) => setTimeout(r, 500));
        const requests = w.stderr().split('\n').filter((l) => /(GET|POST) https:/.test(l));
        expect(requests.filter((l) => /secrets\?limit=500 200/.test(l)), w.stderr()).toHaveLength(1);
        expect(requests.filter((l) => /secrets\?.*watch=true/.test(l)), w.stderr()).toHaveLength(1);
        expect(w.stderr()).not.toMatch(/error|unable|failed/i);
      } finally {
        await w.stop();
      }
    }
  });

  it('get --raw of an uncached fleet list and get (discovery does not list uncached resources yet)', async () => {
    const l = await kubectl(flotilla.kubeconfig, ['get', '--raw', `/api/v1/namespaces/${NS}/configmaps?labelSelector=team%3Dblue`]);
    expect(l.code, l.stderr).toBe(0);
    expect(flotillaMerged(JSON.parse(l.stdout) as List)).toEqual(await membersMerged(`/api/v1/namespaces/${NS}/configmaps?labelSelector=team%3Dblue`));
    const g = await kubectl(flotilla.kubeconfig, ['get', '--raw', `/api/v1/namespaces/${NS}/configmaps/shared`]);
    expect(g.code, g.stderr).toBe(0);
    expect(g.stderr).toMatch(/is in clusters .*; this is/);
  });
});

describe('configuration', () => {
  it('excluded resources (resourcequotas here) are not served fleet-wide; /status says what is live', async () => {
    expect((await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/resourcequotas`)).status).toBe(404);
    expect((await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/resourcequotas/rq-${east.name}`)).status).toBe(404);
    const status = JSON.parse((await ok(flotilla.endpoint, '/status')).body) as { live: { enabled: boolean; exclude: string[] } };
    expect(status.live).toMatchObject({ enabled: true, exclude: ['resourcequotas'] });
  });
});

describe('as the caller', () => {
  it('a caller allowed on one member sees that member’s items, with a Warning naming those that refused', async () => {
    const path = `/api/v1/namespaces/${NS}/configmaps`;
    const res = await ok(flotilla.endpoint, path, { token: alice.token });
    const l = JSON.parse(res.body) as List;
    const own = await listOf(west, path);
    expect(l.items.map((i) => i.metadata.name).sort()).toEqual(own.items.map((i) => i.metadata.name).sort());
    expect(new Set(l.items.map((i) => i.metadata.annotations?.[CLUSTER]))).toEqual(new Set([west.name]));
    const w = warnings(res).join('\n');
    expect(w).toContain(`cluster ${east.name} refused`);
    expect(w).toContain(`cluster ${north.name} refused`);
    expect(w).not.toContain(`cluster ${west.name}`);
    // Paged, a page whose members all refuse is not an empty page (nor a 403): the next members are read.
    const names: string[] = [];
    let token: string | undefined;
    do {
      const page = await listOf(flotilla.endpoint, `${path}?limit=1${token ? `&continue=${encodeURIComponent(token)}` : ''}`, alice.token);
      // Every page west answers holds one item; the last (north's, refused) is empty.
      expect(page.items.length).toBe(page.metadata.continue ? 1 : page.items.length);
      expect(page.items.length).toBeLessThanOrEqual(1);
      names.push(...page.items.map((i) => i.metadata.name));
      token = page.metadata.continue;
    } while (token);
    expect(names.sort()).toEqual(own.items.map((i) => i.metadata.name).sort());
    // A get of west's object: west answers it, the others refuse.
    expect((await memberRequest(flotilla.endpoint, 'GET', `${path}/cm-${west.name}-0`, undefined, { token: alice.token })).status).toBe(200);
  });
  it('a Warning naming what no header may hold (a member’s words of a fullwidth path) is encoded, never a 500', async () => {
    // Found by the abuse suite (seed 371045834): the members' 404s name the path, and flotilla's
    // Warning quoting them held characters a header cannot.
    const res = await memberRequest(flotilla.endpoint, 'GET', '/api/v1/namespaces/%ef%bc%8e%ef%bc%8e/abuse-canary/pods?limit=1.5', undefined, { token: alice.token });
    expect(res.status, res.body).toBeLessThan(500);
    expect((JSON.parse(res.body) as { kind: string }).kind).toBe('Status');
  });
  it('a caller every member refuses gets the member’s 403', async () => {
    const res = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps`, undefined, { token: bob.token });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body)).toMatchObject({ kind: 'Status', reason: 'Forbidden' });
    expect(JSON.parse(res.body).message).toContain('User "bob" cannot list resource "configmaps"');
    // Also with a limit below the member count (the abuse suite found an empty 200 page here).
    expect((await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps?limit=1`, undefined, { token: bob.token })).status).toBe(403);
    const get = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps/cm-${east.name}-0`, undefined, { token: bob.token });
    expect(get.status).toBe(403);
  });
});

describe('a fleet-wide watch of an uncached resource', () => {
  const path = `/api/v1/namespaces/${NS}/configmaps`;
  const make = async (m: MemberInfo, name: string, v: string, method = 'POST') => {
    const res = await memberRequest(m, method, method === 'POST' ? path : `${path}/${name}`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { v } });
    expect(res.status, res.body).toBeLessThan(300);
    return JSON.parse(res.body) as Obj;
  };
  const named = (name: string, type: string) => (es: WatchEvent[]) => es.some((e) => e.type === type && e.object.metadata?.name === name);

  it('interleaves the members’ events, each with its cluster and the global RV of its moment, resumable', async () => {
    const listed = await listOf(flotilla.endpoint, path);
    const from = decodeGlobalRV(listed.metadata.resourceVersion!);
    const w = await openWatch(flotilla.endpoint, `${path}?watch=1&resourceVersion=${listed.metadata.resourceVersion}&timeoutSeconds=60`);
    expect(w.status).toBe(200);
    try {
      const a = await make(east, 'w-east', '1');
      await w.until(named('w-east', 'ADDED'));
      const b = await make(north, 'w-north', '1');
      await w.until(named('w-north', 'ADDED'));
      const c = await make(east, 'w-east', '2', 'PUT');
      await w.until(named('w-east', 'MODIFIED'));
      const seen = w.events.filter((e) => e.type !== 'BOOKMARK').map((e) => `${e.type} ${e.object.metadata!.annotations![CLUSTER]}/${e.object.metadata!.name}`);
      expect(seen).toEqual([`ADDED ${east.name}/w-east`, `ADDED ${north.name}/w-north`, `MODIFIED ${east.name}/w-east`]);
      const rvOf = (i: number) => decodeGlobalRV(w.events.filter((e) => e.type !== 'BOOKMARK')[i]!.object.metadata!.resourceVersion!);
      expect(rvOf(0)).toEqual({ ...from, [east.name]: a.metadata.resourceVersion });
      expect(rvOf(1)).toEqual({ ...from, [east.name]: a.metadata.resourceVersion, [north.name]: b.metadata.resourceVersion });
      expect(rvOf(2)).toEqual({ ...from, [east.name]: c.metadata.resourceVersion, [north.name]: b.metadata.resourceVersion });
      const first = w.events.find((e) => e.type === 'ADDED' && e.object.metadata?.name === 'w-east')!;
      // Resumed from the first event: the two after it, not it.
      const again = await openWatch(flotilla.endpoint, `${path}?watch=1&resourceVersion=${first.object.metadata!.resourceVersion}&timeoutSeconds=60`);
      try {
        await again.until((es) => named('w-east', 'MODIFIED')(es) && named('w-north', 'ADDED')(es));
        await new Promise((r) => setTimeout(r, 300));
        const resumed = again.events.filter((e) => e.type !== 'BOOKMARK').map((e) => `${e.type} ${e.object.metadata!.name}`);
        // Members' replays interleave in no defined order between members; each member's in its own.
        expect(resumed.sort()).toEqual(['ADDED w-north', 'MODIFIED w-east']);
      } finally {
        again.close();
      }
    } finally {
      w.close();
    }
  });

  it('watch-list: every member’s initial ADDEDs, then one initial-events-end bookmark with the global RV', async () => {
    const own = await membersMerged(path);
    for (const accept of ['application/json', TABLE]) {
      const w = await openWatch(flotilla.endpoint, `${path}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=60`, accept);
      expect(w.status).toBe(200);
      try {
        const ends = (e: WatchEvent) => e.type === 'BOOKMARK' && JSON.stringify(e.object).includes('"k8s.io/initial-events-end":"true"');
        await w.until((es) => es.some(ends));
        await new Promise((r) => setTimeout(r, 500));
        const at = w.events.findIndex(ends);
        expect(w.events.filter(ends), accept).toHaveLength(1);
        const added = w.events.slice(0, at).filter((e) => e.type === 'ADDED');
        const names = accept === TABLE
          ? added.flatMap((e) => (e.object as unknown as { rows: { cells: string[] }[] }).rows.map((r) => `${r.cells[1]}/${NS}/${r.cells[0]}`))
          : added.map((e) => `${e.object.metadata!.annotations![CLUSTER]}/${NS}/${e.object.metadata!.name}`);
        expect(names.sort(), accept).toEqual([...own.keys()].sort());
        expect(w.events.slice(at + 1).filter((e) => e.type === 'ADDED'), 'no initial ADDED after the bookmark').toEqual([]);
        expect(Object.keys(decodeGlobalRV(w.events[at]!.object.metadata!.resourceVersion!)).sort()).toEqual(members.map((m) => m.name).sort());
      } finally {
        w.close();
      }
    }
  });

  it('in protobuf, for a client that takes nothing else: a watch-list of every member’s events, one initial-events-end bookmark', async () => {
    const own = await membersMerged(path);
    const res = await memberRequest(flotilla.endpoint, 'GET', `${path}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=4`, undefined, { accept: 'application/vnd.kubernetes.protobuf', timeoutMs: 20_000 });
    expect([res.status, res.headers['content-type']]).toEqual([200, 'application/vnd.kubernetes.protobuf;stream=watch']);
    const events = decodeWatchStream(res.raw!);
    const ends = events.filter((e) => e.type === 'BOOKMARK' && annotationOf(e.object, 'k8s.io/initial-events-end') === 'true');
    expect(ends).toHaveLength(1);
    const at = events.indexOf(ends[0]!);
    const names = events.slice(0, at).filter((e) => e.type === 'ADDED').map((e) => `${annotationOf(e.object, CLUSTER)}/${NS}/${String(fieldAt(e.object, 2, 1, 1))}`);
    expect(names.sort()).toEqual([...own.keys()].sort());
    expect(Object.keys(decodeGlobalRV(String(fieldAt(ends[0]!.object, 2, 1, 6)))).sort()).toEqual(members.map((m) => m.name).sort());
  });

  it('as the caller: alice sees west’s events only', async () => {
    const listed = await listOf(flotilla.endpoint, path);
    const w = await openWatch({ ...flotilla.endpoint, token: alice.token }, `${path}?watch=1&resourceVersion=${listed.metadata.resourceVersion}&timeoutSeconds=60`);
    expect(w.status).toBe(200);
    try {
      await make(east, 'w2-east', '1');
      await make(west, 'w2-west', '1');
      await w.until(named('w2-west', 'ADDED'));
      await new Promise((r) => setTimeout(r, 500));
      expect(w.events.map((e) => `${e.type} ${e.object.metadata!.annotations?.[CLUSTER]}/${e.object.metadata!.name}`)).toEqual([`ADDED ${west.name}/w2-west`]);
    } finally {
      w.close();
    }
    const bobs = await memberRequest(flotilla.endpoint, 'GET', `${path}?watch=1`, undefined, { token: bob.token });
    expect(bobs.status).toBe(403);
  });
});

describe('numbers as the member writes them', () => {
  // JSON.parse would make 9223372036854775807 the float 9223372036854775808, which a Go client
  // decodes as a float64: upstream's CRD watch test then never sees the ADDED it expects.
  const path = `/apis/${BIG_GROUP}/v1/counters`;
  const exact = (text: string) => {
    expect(text).toContain(`"count":${INT64_MAX}`);
    expect(text).not.toMatch(/9\.22337|9223372036854775808|9223372036854776000/);
  };
  it('in a get, a list and a watch of a custom resource with an int64 beyond 2^53', async () => {
    exact((await ok(flotilla.endpoint, `${path}/big`)).body);
    exact((await ok(flotilla.endpoint, path)).body);
    // A watch without a resourceVersion starts with an ADDED for what exists; its member's
    // watch ends after a second and so does flotilla's.
    const watched = await memberRequest(flotilla.endpoint, 'GET', `${path}?watch=1&timeoutSeconds=1`, undefined, { timeoutMs: 20_000 });
    expect(watched.status).toBe(200);
    const added = watched.body.split('\n').find((l) => l.includes('"ADDED"'));
    expect(added).toBeDefined();
    exact(added!);
    expect(JSON.parse(added!).object.metadata.annotations[CLUSTER]).toBe(east.name);
  });
});

describe('a member that does not answer', () => {
  it('is named in a Warning and the others answer within the timeout', async () => {
    const path = `/api/v1/namespaces/${NS}/configmaps`;
    const pid = apiserverPid(fleet, north);
    try {
      await pause(pid, "north's kube-apiserver");
      await expect(memberRequest(north, 'GET', '/readyz', undefined, { timeoutMs: 1000 }), 'north itself does not answer').rejects.toThrow();
      const started = Date.now();
      const res = await ok(flotilla.endpoint, path, { timeoutMs: 30_000 });
      const took = Date.now() - started;
      const l = JSON.parse(res.body) as List;
      expect(new Set(l.items.map((i) => i.metadata.annotations?.[CLUSTER]))).toEqual(new Set([east.name, west.name]));
      expect(warnings(res).join('\n')).toMatch(new RegExp(`cluster ${north.name} is left out: did not answer within 10 s`));
      expect(took).toBeLessThan(15_000);
      expect(took).toBeGreaterThanOrEqual(9_000);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await until('north answers again', async () => (await memberRequest(north, 'GET', '/readyz')).status === 200);
  });

  // A bound of 8 members at once made a fleet of 12 silent names wait out two timeouts, one per
  // wave: every member is asked at once (options.liveReads.concurrency, default 256), as is every
  // member a write searches for its object's holder.
  it('costs one member timeout however many members do not answer', async () => {
    const silent = Array.from({ length: 12 }, (_, i) => ({ ...north, name: `north-${String(i).padStart(2, '0')}` }));
    const wide = await startFlotillaProcess({ fleet, members: [east, ...silent], dir: join(fleet.dir, 'flotilla-live-reads-wide') });
    const pid = apiserverPid(fleet, north);
    try {
      await pause(pid, "north's kube-apiserver");
      // configmaps are not cached: the patch asks every member whether it holds the object.
      const patching = Date.now();
      const patched = await memberRequest(wide.endpoint, 'PATCH', `/api/v1/namespaces/${NS}/configmaps/cm-${east.name}-3`, { metadata: { annotations: { 'fan-out': 'wide' } } }, { contentType: 'application/merge-patch+json', timeoutMs: 60_000 });
      const patchTook = Date.now() - patching;
      expect(patched.status, patched.body.slice(0, 300)).toBe(200);
      expect(patchTook).toBeGreaterThanOrEqual(9_000);
      expect(patchTook).toBeLessThan(15_000);
      const started = Date.now();
      const res = await ok(wide.endpoint, `/api/v1/namespaces/${NS}/configmaps`, { timeoutMs: 60_000 });
      const took = Date.now() - started;
      const l = JSON.parse(res.body) as List;
      expect(new Set(l.items.map((i) => i.metadata.annotations?.[CLUSTER]))).toEqual(new Set([east.name]));
      const said = warnings(res).join('\n');
      for (const m of silent) expect(said).toMatch(new RegExp(`cluster ${m.name} is left out: did not answer within 10 s`));
      expect(took).toBeGreaterThanOrEqual(9_000);
      expect(took).toBeLessThan(15_000);
    } finally {
      process.kill(pid, 'SIGCONT');
      await wide.stop();
    }
    await until('north answers again', async () => (await memberRequest(north, 'GET', '/readyz')).status === 200);
  }, 120_000);
});

// A live list holds every member's answer until the merged one is written: without a bound, 100
// parallel fleet lists of 8 MB made flotilla hold 1.47 GB. options.liveReads.maxBufferMiB bounds
// what all live reads hold at once (src/forward/live-buffer-budget.ts).
describe('the live reads’ buffer (options.liveReads.maxBufferMiB)', () => {
  const BIG_NS = 'live-reads-big';
  /** One ConfigMap of ~300 KB on each member: ~0.9 MB of answers to a fleet list, ~1.8 MB with the merged one. */
  const big = (m: MemberInfo) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `big-${m.name}` }, data: { blob: m.name.padEnd(300_000, 'x') } });
  const path = `/api/v1/namespaces/${BIG_NS}/configmaps`;
  const status = async (p: FlotillaProcess) => (JSON.parse((await ok(p.endpoint, '/status')).body) as { live: { buffer: { heldBytes: number; capacityBytes: number; refusedBusy: number; refusedTooLarge: number } } }).live.buffer;
  let small: FlotillaProcess;
  let shared: FlotillaProcess;

  beforeAll(async () => {
    for (const m of members) {
      for (const [p, b] of [['/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: BIG_NS } }], [path, big(m)]] as const) {
        const res = await memberRequest(m, 'POST', p, b);
        if (res.status !== 201 && res.status !== 409) throw new Error(`POST ${p} on ${m.name}: ${res.status} ${res.body.slice(0, 300)}`);
      }
    }
    [small, shared] = await Promise.all([
      startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-live-reads-1mib'), options: { liveReads: { maxBufferMiB: 1 } } }),
      startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-live-reads-4mib'), options: { liveReads: { maxBufferMiB: 4 } } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([small?.stop(), shared?.stop()]);
    for (const m of members) await memberRequest(m, 'DELETE', `/api/v1/namespaces/${BIG_NS}`);
  });

  it('refuses a list whose answers alone pass it: 429 without Retry-After, saying to page; paged, the same list is whole', async () => {
    const whole = await memberRequest(small.endpoint, 'GET', path);
    expect(whole.status, whole.body.slice(0, 300)).toBe(429);
    expect(whole.headers['retry-after']).toBeUndefined();
    const refused = JSON.parse(whole.body) as { reason: string; message: string; details?: unknown };
    expect(refused.reason).toBe('TooManyRequests');
    expect(refused.details).toBeUndefined();
    expect(refused.message).toMatch(/more than the 1 MiB flotilla holds for live reads at once .* list it in pages/);
    // The same list with the default buffer: every member's big ConfigMap.
    const full = await listOf(flotilla.endpoint, path);
    expect(full.items.filter((i) => i.metadata.name.startsWith('big-')).map((i) => i.metadata.annotations?.[CLUSTER]).sort()).toEqual(members.map((m) => m.name).sort());
    // Paged (one item a page: one member's answer), every page fits.
    const names: string[] = [];
    let next: string | undefined;
    do {
      const page = await listOf(small.endpoint, `${path}?limit=1${next ? `&continue=${next}` : ''}`);
      names.push(...page.items.map((i) => `${i.metadata.annotations?.[CLUSTER]}/${i.metadata.name}`));
      next = page.metadata.continue;
    } while (next);
    expect(names.sort()).toEqual(full.items.map((i) => `${i.metadata.annotations?.[CLUSTER]}/${i.metadata.name}`).sort());
    expect(await status(small)).toMatchObject({ heldBytes: 0, capacityBytes: 1024 * 1024, refusedTooLarge: 1 });
  });

  // Whole objects (-o json): a table's rows (kubectl's default) carry no data and fit.
  it('kubectl shows the refusal of an unpaged list, and lists in pages', async () => {
    const unpaged = await kubectl(small.kubeconfig, ['get', 'configmaps', '-n', BIG_NS, '--chunk-size=0', '-o', 'json']);
    expect(unpaged.code).not.toBe(0);
    expect(unpaged.stderr).toMatch(/TooManyRequests.*list it in pages \(limit and continue; kubectl --chunk-size\)/);
    const paged = await kubectl(small.kubeconfig, ['get', 'configmaps', '-n', BIG_NS, '--chunk-size=1', '-o', 'json']);
    expect(paged.code, paged.stderr).toBe(0);
    const names = (JSON.parse(paged.stdout) as List).items.map((i) => i.metadata.name).filter((n) => n.startsWith('big-'));
    expect(names.sort()).toEqual(members.map((m) => `big-${m.name}`).sort());
    const table = await kubectl(small.kubeconfig, ['get', 'configmaps', '-n', BIG_NS, '--chunk-size=0']);
    expect(table.code, table.stderr).toBe(0);
  });

  it('shared by parallel lists: each answers whole or 429 with Retry-After, never a 5xx, and every byte is given back', async () => {
    const answers = await Promise.all(Array.from({ length: 40 }, () => memberRequest(shared.endpoint, 'GET', path, undefined, { timeoutMs: 60_000 })));
    const codes = answers.map((a) => a.status);
    expect(codes.filter((c) => c !== 200 && c !== 429), codes.join(' ')).toEqual([]);
    expect(codes).toContain(200);
    expect(codes).toContain(429);
    for (const a of answers.filter((x) => x.status === 429)) {
      expect(a.headers['retry-after']).toBe('1');
      expect(JSON.parse(a.body)).toMatchObject({ reason: 'TooManyRequests', details: { retryAfterSeconds: 1 } });
    }
    for (const a of answers.filter((x) => x.status === 200)) {
      expect((JSON.parse(a.body) as List).items.filter((i) => i.metadata.name.startsWith('big-'))).toHaveLength(members.length);
    }
    await until('every held byte given back', async () => (await status(shared)).heldBytes === 0);
    const after = await status(shared);
    expect(after.refusedBusy).toBe(codes.filter((c) => c === 429).length);
    const metrics = (await ok(shared.endpoint, '/metrics', { accept: 'text/plain' })).body;
    expect(metrics).toMatch(new RegExp(`^flotilla_live_reads_refused_total\\{reason="busy"\\} ${after.refusedBusy}$`, 'm'));
    expect(metrics).toMatch(/^flotilla_live_read_buffer_bytes 0$/m);
  }, 120_000);
});

// A live watch writes each member's events to the client as they come: written without regard to
// whether the client reads them, a client that read nothing while members wrote 900 MB of events
// had 241 MB queued in flotilla. The members' streams are paused until the client drains.
describe('a live watch whose client reads slowly', () => {
  const SLOW_NS = 'live-reads-slow';
  const WRITES = 40;
  const blob = 'x'.repeat(900_000);

  beforeAll(async () => {
    const res = await memberRequest(east, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: SLOW_NS } });
    if (res.status !== 201 && res.status !== 409) throw new Error(`namespace: ${res.status} ${res.body.slice(0, 300)}`);
  });
  afterAll(async () => {
    await memberRequest(east, 'DELETE', `/api/v1/namespaces/${SLOW_NS}`);
  });

  it('makes the members wait: flotilla queues about one event for it, and the client still gets every event in order', async () => {
    const path = `/api/v1/namespaces/${SLOW_NS}/configmaps`;
    const ca = readFileSync(flotilla.endpoint.caFile);
    const lines: string[] = [];
    let ended = false;
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const r = httpsRequest(new URL(`${path}?watch=true`, flotilla.endpoint.server), { ca, headers: { authorization: `Bearer ${flotilla.endpoint.token}`, accept: 'application/json' } }, resolve);
      r.on('error', reject);
      r.end();
    });
    expect(res.statusCode).toBe(200);
    let pending = '';
    res.on('data', (c: Buffer) => {
      pending += c.toString('utf8');
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        lines.push(pending.slice(0, nl));
        pending = pending.slice(nl + 1);
      }
    });
    res.on('end', () => (ended = true));
    // The client reads nothing while east writes ~36 MB of events.
    res.pause();
    const rvs: string[] = [];
    for (let i = 0; i < WRITES; i++) {
      const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'big' }, data: { blob: `${blob}${i}` } };
      const w = i === 0 ? await memberRequest(east, 'POST', path, cm) : await memberRequest(east, 'PUT', `${path}/big`, cm);
      expect(w.status, w.body.slice(0, 300)).toBe(i === 0 ? 201 : 200);
      rvs.push((JSON.parse(w.body) as Obj).metadata.resourceVersion!);
    }
    await new Promise((r) => setTimeout(r, 2000));
    const held = (JSON.parse((await ok(flotilla.endpoint, '/status')).body) as { live: { watches: { open: number; queuedBytes: number } } }).live.watches;
    expect(held.open).toBeGreaterThanOrEqual(1);
    expect(held.queuedBytes, `${held.queuedBytes} bytes queued for a client that reads nothing`).toBeLessThan(4 * 1024 * 1024);
    // Reading again, the client gets east's events in east's order, none twice; if east ended its
    // blocked watch, the stream ends and a watch from the last RV seen brings the rest.
    res.resume();
    const bigRV = (o: Obj) => (o.metadata.name === 'big' ? [decodeGlobalRV(o.metadata.resourceVersion!)[east.name]!] : []);
    const seenRVs = () => lines.filter(Boolean).flatMap((l) => bigRV((JSON.parse(l) as { object: Obj }).object));
    await until('every write seen, or the watch ended', async () => ended || seenRVs().includes(rvs.at(-1)!), 30_000);
    let seen = seenRVs();
    if (!seen.includes(rvs.at(-1)!)) {
      const last = JSON.parse(lines.filter(Boolean).at(-1)!) as { object: Obj };
      const rest = await openWatch(flotilla.endpoint, `${path}?watch=true&resourceVersion=${last.object.metadata.resourceVersion}`);
      try {
        await until('the rest after a new watch', async () => rest.events.some((e) => bigRV(e.object as Obj)[0] === rvs.at(-1)));
        seen = [...seen, ...rest.events.flatMap((e) => bigRV(e.object as Obj))];
      } finally {
        rest.close();
      }
    }
    res.destroy();
    expect(seen).toEqual(rvs);
  }, 90_000);
});

// Every member request once shared one pool of 64 connections a member: a caller's 64 live
// watches took them all, and every other request to that member (lists, gets, writes, the token
// reviews that authenticate every caller) waited out its timeout. Long-running requests now have
// connections of their own.
describe('many live watches', () => {
  it('past options.liveReads.maxWatches open, a new one is refused with 429 and Retry-After until one closes', async () => {
    const few = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-live-reads-3-watches'), options: { liveReads: { maxWatches: 3 } } });
    const watches: { close(): void }[] = [];
    try {
      const path = `/api/v1/namespaces/${NS}/configmaps?watch=true`;
      for (let i = 0; i < 3; i++) {
        const w = await openWatch(few.endpoint, path);
        expect(w.status).toBe(200);
        watches.push(w);
      }
      const refused = await memberRequest(few.endpoint, 'GET', path, undefined, { timeoutMs: 10_000 });
      expect(refused.status, refused.body.slice(0, 300)).toBe(429);
      expect(refused.headers['retry-after']).toBe('1');
      expect(JSON.parse(refused.body)).toMatchObject({ reason: 'TooManyRequests', message: expect.stringMatching(/as many live watches open as it may \(3, options\.liveReads\.maxWatches\)/) });
      // Lists and gets are not watches: they still answer.
      expect((await memberRequest(few.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps`)).status).toBe(200);
      watches.shift()!.close();
      await until('a watch freed', async () => (JSON.parse((await ok(few.endpoint, '/status')).body) as { live: { watches: { open: number } } }).live.watches.open === 2);
      const again = await openWatch(few.endpoint, path);
      watches.push(again);
      expect(again.status).toBe(200);
      const metrics = (await ok(few.endpoint, '/metrics', { accept: 'text/plain' })).body;
      expect(metrics).toMatch(/^flotilla_live_reads_refused_total\{reason="watches"\} 1$/m);
      expect(metrics).toMatch(/^flotilla_live_watches 3$/m);
    } finally {
      for (const w of watches) w.close();
      await few.stop();
    }
  });

  it('leave the member connections other requests need: gets, writes, cached reads and new callers answer at once', async () => {
    const watches: { close(): void }[] = [];
    try {
      for (let i = 0; i < 70; i++) watches.push(await openWatch(flotilla.endpoint, `/api/v1/namespaces/${NS}/configmaps?watch=true`));
      const timed = async (what: string, call: () => Promise<MemberResponse>, expected: number) => {
        const started = Date.now();
        const res = await call();
        expect(res.status, `${what}: ${res.body.slice(0, 300)}`).toBe(expected);
        expect(Date.now() - started, `${what} took`).toBeLessThan(3000);
      };
      const opts = { timeoutMs: 20_000 };
      await timed('a live get', () => memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps/cm-${east.name}-1`, undefined, opts), 200);
      await timed('a live list', () => memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps`, undefined, opts), 200);
      await timed('a write', () => memberRequest(flotilla.endpoint, 'PATCH', `/api/v1/namespaces/${NS}/configmaps/cm-${east.name}-1`, { metadata: { annotations: { 'many-watches': 'patched' } } }, { ...opts, contentType: 'application/merge-patch+json' }), 200);
      await timed('a cached list', () => memberRequest(flotilla.endpoint, 'GET', '/api/v1/namespaces', undefined, opts), 200);
      // A caller flotilla has not seen: its token is reviewed by the first member, then every
      // member refuses it (bob may read no configmaps): reviewed and asked, not left waiting.
      await timed('a new caller (token review)', () => memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps`, undefined, { ...opts, token: bob.token }), 403);
    } finally {
      for (const w of watches) w.close();
    }
  }, 120_000);
});

// Token and access reviews shared the members' connections with every list and write: behind
// one caller's flood of live lists that members hold (a resourceVersion they have not reached:
// each waits ~3 s, then 504), another caller's token review waited out its timeout (503 after
// 9.2 s). Reviews now have connections of their own.
describe('a flood of live lists the members hold', () => {
  it('does not delay another caller’s authentication and authorization', async () => {
    const fresh = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-live-reads-flood') });
    try {
      const future = encodeGlobalRV(Object.fromEntries(members.map((m) => [m.name, '999999999'])));
      const path = `/api/v1/namespaces/${NS}/configmaps?resourceVersion=${future}&resourceVersionMatch=NotOlderThan`;
      const flood = Promise.all(Array.from({ length: 150 }, () => memberRequest(fresh.endpoint, 'GET', path, undefined, { timeoutMs: 60_000 }).then((r) => r.status, (e: Error) => e.message)));
      await new Promise((r) => setTimeout(r, 500));
      // alice is new to this flotilla: her token is reviewed, and what she may read of the
      // cached pods is asked of every member (she may read none: 403).
      const started = Date.now();
      const res = await memberRequest(fresh.endpoint, 'GET', `/api/v1/namespaces/${NS}/pods`, undefined, { token: alice.token, timeoutMs: 30_000 });
      const took = Date.now() - started;
      expect(res.status, res.body.slice(0, 300)).toBe(403);
      expect(took, 'alice waited').toBeLessThan(2500);
      const codes = await flood;
      // The members' own answer to a resourceVersion they have not reached (or, queued past the
      // member timeout, flotilla's 503 naming them): the flood was held, not refused at once.
      expect(codes.filter((c) => c !== 504 && c !== 503), String(codes)).toEqual([]);
    } finally {
      await fresh.stop();
    }
  }, 120_000);
});
