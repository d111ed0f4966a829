import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { memberRequest, type MemberEndpoint, type MemberResponse } from '../fleet/http.js';
import { DEFAULT_RESOURCES, startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { clientsDir } from '../support/informer.js';

/**
 * CBOR (KEP-4222), which the members serve no more than flotilla (their CBOR feature gate is off,
 * the default): the same requests to a member and to flotilla get the same code and reason, on
 * every path (cached and live reads, writes, a subresource, a review); CBOR preferred with JSON
 * allowed is JSON. Then client-go with its CBOR gates on falls back to JSON through flotilla, as
 * its own debug log shows.
 */
const fleet = inject('fleet');
const east = fleet.members.find((m) => m.name === 'east')!;
const NS = 'cbor';
let flotilla: FlotillaProcess;

beforeAll(async () => {
  // In east alone: flotilla's creates go there.
  await memberRequest(east, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  await memberRequest(east, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'held' } });
  await memberRequest(east, 'POST', `/api/v1/namespaces/${NS}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'held' } });
  flotilla = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-cbor'), resources: [...DEFAULT_RESOURCES, { version: 'v1', resource: 'configmaps' }] });
}, 120_000);

afterAll(async () => {
  await flotilla?.stop();
  await memberRequest(east, 'DELETE', `/api/v1/namespaces/${NS}`);
});

interface Probe {
  name: string;
  method: string;
  path: string;
  accept: string;
  contentType?: string;
}

// configmaps are cached, secrets read live (not cached: flotilla asks the members).
const PROBES: Probe[] = (['configmaps', 'secrets'] as const).flatMap((r) => [
  { name: `${r}: list`, method: 'GET', path: `/api/v1/namespaces/${NS}/${r}`, accept: 'application/cbor' },
  { name: `${r}: get`, method: 'GET', path: `/api/v1/namespaces/${NS}/${r}/held`, accept: 'application/cbor' },
  { name: `${r}: watch`, method: 'GET', path: `/api/v1/namespaces/${NS}/${r}?watch=1&timeoutSeconds=1`, accept: 'application/cbor-seq' },
  { name: `${r}: create in CBOR`, method: 'POST', path: `/api/v1/namespaces/${NS}/${r}`, accept: 'application/json', contentType: 'application/cbor' },
  { name: `${r}: create asking CBOR back`, method: 'POST', path: `/api/v1/namespaces/${NS}/${r}?dryRun=All`, accept: 'application/cbor', contentType: 'application/json' },
  { name: `${r}: create in CBOR asking CBOR back`, method: 'POST', path: `/api/v1/namespaces/${NS}/${r}`, accept: 'application/cbor', contentType: 'application/cbor' },
  { name: `${r}: update in CBOR`, method: 'PUT', path: `/api/v1/namespaces/${NS}/${r}/held`, accept: 'application/json', contentType: 'application/cbor' },
  { name: `${r}: patch in CBOR asking CBOR back`, method: 'PATCH', path: `/api/v1/namespaces/${NS}/${r}/held`, accept: 'application/cbor', contentType: 'application/cbor' },
  { name: `${r}: apply in CBOR`, method: 'PATCH', path: `/api/v1/namespaces/${NS}/${r}/held?fieldManager=t`, accept: 'application/json', contentType: 'application/apply-patch+cbor' },
  { name: `${r}: delete in CBOR`, method: 'DELETE', path: `/api/v1/namespaces/${NS}/${r}/held`, accept: 'application/json', contentType: 'application/cbor' },
  { name: `${r}: delete asking CBOR back`, method: 'DELETE', path: `/api/v1/namespaces/${NS}/${r}/held?dryRun=All`, accept: 'application/cbor' },
]).concat([
  { name: 'a subresource', method: 'GET', path: `/api/v1/namespaces/${NS}/pods/none/status`, accept: 'application/cbor' },
  { name: 'a review asking CBOR back', method: 'POST', path: '/apis/authentication.k8s.io/v1/selfsubjectreviews', accept: 'application/cbor', contentType: 'application/json' },
]);

function send(ep: MemberEndpoint, p: Probe): Promise<MemberResponse> {
  const body = p.contentType === 'application/json' ? JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'asked' } }) : p.contentType ? '\u00a0' : undefined;
  return memberRequest(ep, p.method, p.path, body, { accept: p.accept, ...(p.contentType ? { contentType: p.contentType } : {}) });
}

const statusOf = (r: MemberResponse) => {
  const s = JSON.parse(r.body) as { kind?: string; reason?: string; code?: number; message?: string };
  // The 415s' wording is the apiserver's; a 406 names what each server answers in.
  return { status: r.status, kind: s.kind, reason: s.reason, code: s.code, ...(r.status === 415 ? { message: s.message } : {}) };
};

describe('CBOR asked of a member and of flotilla', () => {
  it.each(PROBES.map((p) => [p.name, p] as const))('%s: the same code and Status', async (_name, p) => {
    const [own, via] = await Promise.all([send(east, p), send(flotilla.endpoint, p)]);
    expect(own.status, own.body).toBeGreaterThanOrEqual(400);
    expect(statusOf(via)).toEqual(statusOf(own));
  });

  it('CBOR preferred with JSON allowed is JSON, cached, live and watched', async () => {
    for (const path of [`/api/v1/namespaces/${NS}/configmaps`, `/api/v1/namespaces/${NS}/secrets/held`, `/api/v1/namespaces/${NS}/configmaps?watch=1&timeoutSeconds=1`]) {
      const res = await memberRequest(flotilla.endpoint, 'GET', path, undefined, { accept: 'application/cbor;q=1, application/json;q=0.9' });
      expect(res.status, res.body).toBe(200);
      expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
    }
  });
});

describe('client-go with ClientsAllowCBOR and ClientsPreferCBOR', () => {
  it('its dynamic client creates, lists and watches through flotilla, falling back to JSON after a 415', async () => {
    const bin = join(clientsDir(), 'informer');
    const child = spawn(bin, ['-kubeconfig', flotilla.kubeconfig, '-mode', 'cbor-client', '-namespace', NS, '-v=8'], {
      // Watch-list off (client-go 0.35 has it on): its List is then one plain GET, each exchange of the log below one call.
      env: { ...process.env, KUBE_FEATURE_ClientsAllowCBOR: 'true', KUBE_FEATURE_ClientsPreferCBOR: 'true', KUBE_FEATURE_WatchListClient: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let log = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (log += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, log.slice(-3000)).toBe(0);
    expect(out.split('\n').filter((l) => /^(ERROR|CREATED|SYNCED|WATCHED|END)/.test(l)).map((l) => l.replace(/cbor-\w+/, 'cbor-*').replace(/SYNCED \d+/, 'SYNCED'))).toEqual([
      'ERROR create 415 UnsupportedMediaType', 'CREATED cbor-*', 'SYNCED', 'CREATED cbor-*', 'WATCHED cbor-*', 'END',
    ]);
    // client-go's debug log (-v=8): each request with its headers (a block ending in a line ' >'), then its answer's.
    const exchanges = [...log.matchAll(/"Request" verb="(\w+)" url="([^"]+)" headers=<([\s\S]*?)\n >[\s\S]*?"Response" status="(\d+)[^"]*" headers=<([\s\S]*?)\n >/g)]
      .map(([, verb, url, sent, status, got]) => ({
        call: `${verb} ${/watch=true/.test(url!) ? 'watch' : verb === 'GET' ? 'list' : 'create'}`,
        accept: /Accept: (.*)/.exec(sent!)?.[1],
        sent: /Content-Type: (.*)/.exec(sent!)?.[1],
        status: Number(status),
        got: /Content-Type: ([^;\n]*)/.exec(got!)?.[1],
      }));
    const CBOR_FIRST = 'application/json;q=0.9,application/cbor;q=1';
    expect(exchanges).toEqual([
      { call: 'POST create', accept: CBOR_FIRST, sent: 'application/cbor', status: 415, got: 'application/json' },
      { call: 'POST create', accept: CBOR_FIRST, sent: 'application/json', status: 201, got: 'application/json' },
      { call: 'GET list', accept: CBOR_FIRST, sent: undefined, status: 200, got: 'application/json' },
      { call: 'GET watch', accept: CBOR_FIRST, sent: undefined, status: 200, got: 'application/json' },
      { call: 'POST create', accept: CBOR_FIRST, sent: 'application/json', status: 201, got: 'application/json' },
    ]);
  }, 90_000);
});
