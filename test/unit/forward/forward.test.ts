import { describe, expect, it } from 'vitest';
import { mergeListAnswers, requestBodyForMember, responseForClient } from '../../../src/forward/translate.js';
import { yamlTooDeep } from '../../../src/api/write-body.js';
import { anonymousIdentity, impersonationHeaders } from '../../../src/auth/identity.js';
import type { IncomingMessage } from 'node:http';
import { Authenticator, parseTokenFile } from '../../../src/auth/authenticator.js';
import { encodeGlobalRV, decodeGlobalRV, memberRV } from '../../../src/api/global-rv.js';
import { StatusError } from '../../../src/api/status.js';

const CLUSTER = 'search.flotilla.io/cluster';
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- assertions reach into arbitrary JSON
type Json = any;
const json = (b: Buffer | undefined) => JSON.parse(b!.toString()) as Json;

describe('RV and annotation translation', () => {
  it('a global RV becomes the member’s own; one from another cluster is a 409; a foreign token passes', () => {
    expect(memberRV(encodeGlobalRV({ east: '42' }), 'east')).toBe('42');
    expect(() => memberRV(encodeGlobalRV({ west: '42' }), 'east')).toThrow(StatusError);
    expect(memberRV('12345', 'east')).toBe('12345');
    expect(memberRV('', 'east')).toBe('');
  });

  it('request bodies: JSON objects, JSON patches and apply YAML are translated; others pass byte for byte', () => {
    const rv = encodeGlobalRV({ east: '7' });
    const obj = Buffer.from(JSON.stringify({ metadata: { name: 'x', resourceVersion: rv, annotations: { [CLUSTER]: 'east', keep: 'y' } }, data: { a: '1' } }));
    expect(json(requestBodyForMember(obj, 'application/json', 'east'))).toEqual({ metadata: { name: 'x', resourceVersion: '7', annotations: { keep: 'y' } }, data: { a: '1' } });
    const patch = Buffer.from(JSON.stringify([{ op: 'test', path: '/metadata/resourceVersion', value: rv }, { op: 'add', path: '/data/b', value: '2' }]));
    expect(json(requestBodyForMember(patch, 'application/json-patch+json', 'east'))[0].value).toBe('7');
    const yaml = Buffer.from(`apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  resourceVersion: "${rv}"\n`);
    expect(json(requestBodyForMember(yaml, 'application/apply-patch+yaml', 'east')).metadata.resourceVersion).toBe('7');
    const plain = Buffer.from('{"metadata":{"annotations":{"a":"b"}}}');
    expect(requestBodyForMember(plain, 'application/merge-patch+json', 'east')).toBe(plain);
    const proto = Buffer.from([0x6b, 0x38, 0x73, 0x00, 1, 2, 3]);
    expect(requestBodyForMember(proto, 'application/vnd.kubernetes.protobuf', 'east')).toBe(proto);
    expect(() => requestBodyForMember(Buffer.from('{"resourceVersion": nope'), 'application/json', 'east')).toThrow(/not valid JSON/);
  });

  it('answers: objects and list items get a global RV and the cluster annotation; Status passes', () => {
    const a = responseForClient(Buffer.from(JSON.stringify({ kind: 'ConfigMap', metadata: { name: 'x', resourceVersion: '9' } })), 'application/json', 'west');
    expect(a.rv).toBe('9');
    expect(json(a.body).metadata).toEqual({ name: 'x', resourceVersion: encodeGlobalRV({ west: '9' }), annotations: { [CLUSTER]: 'west' } });
    const status = Buffer.from(JSON.stringify({ kind: 'Status', apiVersion: 'v1', code: 409, metadata: {} }));
    expect(responseForClient(status, 'application/json', 'west').body).toBe(status);
    const proto = Buffer.from([1, 2, 3]);
    expect(responseForClient(proto, 'application/vnd.kubernetes.protobuf', 'west').body).toBe(proto);
  });

  it('merges the lists of a fanned-out deletecollection', () => {
    const list = (rv: string, names: string[]) => Buffer.from(JSON.stringify({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: rv }, items: names.map((name) => ({ metadata: { name, resourceVersion: rv } })) }));
    const merged = json(mergeListAnswers([{ cluster: 'east', body: list('5', ['a']) }, { cluster: 'west', body: list('8', ['b', 'c']) }]));
    expect(merged.kind).toBe('ConfigMapList');
    expect(decodeGlobalRV(merged.metadata.resourceVersion)).toEqual({ east: '5', west: '8' });
    expect(merged.items.map((i: Json) => `${i.metadata.annotations[CLUSTER]}/${i.metadata.name}`)).toEqual(['east/a', 'west/b', 'west/c']);
  });
});

describe('identity', () => {
  it('Impersonate-* headers: groups repeated, extra keys percent-encoded, system:authenticated left out', () => {
    expect(impersonationHeaders({ user: 'alice', uid: 'u1', groups: ['team-a', 'system:authenticated'], extra: { 'scopes.example.com/Key': ['a', 'b'] } })).toEqual({
      'impersonate-user': 'alice',
      'impersonate-uid': 'u1',
      'impersonate-group': ['team-a'],
      'impersonate-extra-scopes.example.com%2fkey': ['a', 'b'],
    });
  });

  it('reads the apiserver’s static token file format', () => {
    const tokens = parseTokenFile('# comment\nt1,alice,uid-a,"team-a,devs"\nt2,bob,uid-b\n\n', 'tokens.csv');
    expect(tokens.get('t1')).toEqual({ user: 'alice', uid: 'uid-a', groups: ['team-a', 'devs'], extra: {} });
    expect(tokens.get('t2')).toEqual({ user: 'bob', uid: 'uid-b', groups: [], extra: {} });
    expect(() => parseTokenFile('only-a-token\n', 'tokens.csv')).toThrow(/tokens.csv:1/);
  });

  it('a caller without credentials is system:anonymous only where allowed; bad credentials never are', async () => {
    const tokens = parseTokenFile('t1,alice,uid-a,"team-a"\n', 'tokens.csv');
    const req = (authorization?: string) => ({ headers: authorization ? { authorization } : {}, socket: {} }) as unknown as IncomingMessage;
    const closed = new Authenticator({ tokens, cacheTTLSeconds: 10 }, () => undefined);
    const open = new Authenticator({ tokens, cacheTTLSeconds: 10, anonymous: true }, () => undefined);
    expect(await closed.authenticate(req())).toBeUndefined();
    expect(await open.authenticate(req())).toEqual({ user: 'system:anonymous', groups: ['system:unauthenticated'], extra: {} });
    expect(await open.authenticate(req('Bearer t1'))).toMatchObject({ user: 'alice' });
    await expect(open.authenticate(req('Bearer wrong'))).rejects.toMatchObject({ code: 401 });
    await expect(open.authenticate(req('Basic YTpi'))).rejects.toMatchObject({ code: 401 });
    expect(impersonationHeaders(anonymousIdentity())).toEqual({ 'impersonate-user': 'system:anonymous', 'impersonate-group': ['system:unauthenticated'] });
  });
});

describe('bodies too deep to translate are a 400, never a crash', () => {
  it('yamlTooDeep: flow nesting and block indentation past the bounds; quotes and normal manifests pass', () => {
    expect(yamlTooDeep(`a: ${'['.repeat(201)}${']'.repeat(201)}`)).toBe(true);
    expect(yamlTooDeep(`a: ${'['.repeat(200)}${']'.repeat(200)}`)).toBe(false);
    expect(yamlTooDeep(`a: "${'['.repeat(5000)}"\nb: '${'{'.repeat(5000)}'`)).toBe(false);
    expect(yamlTooDeep(`a:\n${' '.repeat(401)}b: 1\n`)).toBe(true);
    expect(yamlTooDeep('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  resourceVersion: "1"\ndata:\n  k: "[{"\n')).toBe(false);
  });

  it('a deep apply-patch YAML or JSON body with a resourceVersion to translate is a 400', () => {
    const rv = encodeGlobalRV({ east: '7' });
    const deepYaml = Buffer.from(`metadata:\n  resourceVersion: "${rv}"\nspec: ${'['.repeat(10_000)}${']'.repeat(10_000)}\n`);
    expect(() => requestBodyForMember(deepYaml, 'application/apply-patch+yaml', 'east')).toThrow(expect.objectContaining({ code: 400 }));
    const deepJson = Buffer.from(`{"metadata":{"resourceVersion":"${rv}"},"spec":${'['.repeat(10_000)}${']'.repeat(10_000)}}`);
    expect(() => requestBodyForMember(deepJson, 'application/json', 'east')).toThrow(expect.objectContaining({ code: 400 }));
  });
});
