import { describe, expect, it } from 'vitest';
import { createServer, request, type Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { RecordedRequest } from '../../support/recording-relay.js';
import { startRecordingRelay } from '../../support/recording-relay.js';
import { checkAnswer, checkMemberRequest, checkParseError, pathViolations, snapshotDiff, type MemberTrafficPolicy } from '../../support/abuse/invariants.js';
import fc from 'fast-check';
import { caseArb, renderRaw } from '../../support/abuse/generators.js';

/** The abuse suite's checker must be able to fail: each invariant against a record that breaks it. */
const ADMIN = 'Bearer admin-token';
const alice = { user: 'alice', uid: 'uid-alice', groups: ['team-a', 'system:authenticated'] };
const policy: MemberTrafficPolicy = {
  flotillaAuthorization: ADMIN,
  cachedResources: [
    { group: '', version: 'v1', resource: 'pods' },
    { group: '', version: 'v1', resource: 'configmaps' },
    { group: 'apps', version: 'v1', resource: 'deployments' },
  ],
  callers: [alice],
  smuggleMarker: 'abuse-smuggled-7f3a',
};

let seq = 0;
function rec(method: string, url: string, headers: string[] = [], body = ''): RecordedRequest {
  return { relay: 'east', seq: ++seq, connection: 1, indexOnConnection: 0, at: Date.now(), method, url, rawHeaders: ['Host', 'east', 'Authorization', ADMIN, ...headers], body: Buffer.from(body), upgrade: false };
}
const kinds = (r: RecordedRequest, ctx?: Parameters<typeof checkMemberRequest>[2]) => checkMemberRequest(r, policy, ctx).map((v) => v.kind);

describe('abuse invariants: member traffic', () => {
  it('lets flotilla’s own reads, reviews and the caller’s impersonated requests through', () => {
    expect(kinds(rec('GET', '/api/v1/pods?limit=500&resourceVersion=0'))).toEqual([]);
    expect(kinds(rec('GET', '/apis/apps/v1/namespaces/shop/deployments?watch=true&allowWatchBookmarks=true'))).toEqual([]);
    expect(kinds(rec('GET', '/openapi/v3/apis/apps/v1?hash=abc'))).toEqual([]);
    expect(kinds(rec('GET', '/api/v1/namespaces/shop'))).toEqual([]);
    expect(kinds(rec('POST', '/apis/authentication.k8s.io/v1/tokenreviews', ['Content-Length', '60'], '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview"}'))).toEqual([]);
    const asAlice = rec('DELETE', '/api/v1/namespaces/shop/configmaps/x', ['Impersonate-User', 'alice', 'Impersonate-Uid', 'uid-alice', 'Impersonate-Group', 'team-a', 'User-Agent', 'abuse-1 via flotilla']);
    expect(kinds(asAlice, { caller: alice, sentImpersonation: false })).toEqual([]);
    expect(kinds(asAlice)).toEqual([]);
  });

  it('flags a smuggled request: flotilla’s connection, no impersonation, a path it never reads', () => {
    // What a member parses out of a DELETE body sent without Content-Length.
    const smuggled: RecordedRequest = { ...rec('DELETE', '/api/v1/namespaces/kube-system/secrets/x?abuse-smuggled-7f3a=1'), rawHeaders: ['Host', 'east', 'X-Abuse', 'abuse-smuggled-7f3a'], indexOnConnection: 1 };
    expect(kinds(smuggled)).toEqual(expect.arrayContaining(['member:smuggled-request', 'member:foreign-credentials', 'member:own-identity-not-allowlisted']));
    // Even without the marker: a write with flotilla's identity is never allowed.
    expect(kinds(rec('DELETE', '/api/v1/namespaces/kube-system/secrets/x'))).toEqual(['member:own-identity-not-allowlisted']);
    expect(kinds(rec('GET', '/api/v1/namespaces/kube-system/secrets'))).toEqual(['member:own-identity-not-allowlisted']);
    expect(kinds(rec('GET', '/api/v1/namespaces/shop/pods/web/log'))).toEqual(['member:own-identity-not-allowlisted']);
    expect(kinds(rec('POST', '/apis/authentication.k8s.io/v1/tokenreviews', ['Content-Length', '2'], '{}'))).toEqual(['member:own-identity-review-body']);
  });

  it('flags dot segments in every encoding, encoded slashes and empty segments', () => {
    expect(kinds(rec('GET', '/openapi/v3/%2e%2e/%2e%2e/api/v1/namespaces/kube-system/secrets'))).toEqual(expect.arrayContaining(['member:encoded-dot', 'member:dot-segment', 'member:own-identity-not-allowlisted']));
    expect(pathViolations('/api/v1/../v1/pods').map((v) => v.kind)).toEqual(['member:dot-segment']);
    expect(pathViolations('/api/v1/./pods').map((v) => v.kind)).toEqual(['member:dot-segment']);
    expect(pathViolations('/api/v1/.%2E/pods').map((v) => v.kind)).toEqual(['member:encoded-dot', 'member:dot-segment']);
    expect(pathViolations('/api/v1/namespaces/a%2Fb/pods').map((v) => v.kind)).toEqual(['member:encoded-slash']);
    expect(pathViolations('/api//v1/pods').map((v) => v.kind)).toEqual(['member:double-slash']);
    // Double encoding stays a literal "%2e" segment name to the member: not a dot segment.
    expect(pathViolations('/api/v1/namespaces/%252e%252e/pods')).toEqual([]);
    // A query may hold anything.
    expect(pathViolations('/api/v1/pods?x=/../%2e%2e//')).toEqual([]);
  });

  it('flags an unframed body and bytes a member could not parse', () => {
    expect(kinds(rec('DELETE', '/api/v1/namespaces/shop/configmaps/x', ['Impersonate-User', 'alice'], '{"kind":"DeleteOptions"}'))).toEqual(['member:unframed-body']);
    expect(checkParseError({ relay: 'east', seq: 1, connection: 1, at: 0, code: 'HPE_INVALID_METHOD', message: 'Invalid method encountered', rawPacket: '{}GET / HTTP/1.1' }).kind).toBe('member:unparseable-bytes');
  });

  it('flags impersonation that is not exactly the caller, and the caller’s own Impersonate-* passed over', () => {
    const as = (...h: string[]) => rec('GET', '/api/v1/namespaces/shop/pods/web/log', h);
    const ctx = { caller: alice, sentImpersonation: false };
    expect(kinds(as('Impersonate-User', 'system:admin'), ctx)).toEqual(['member:impersonation-mismatch']);
    expect(kinds(as('Impersonate-User', 'alice', 'Impersonate-Group', 'system:masters'), ctx)).toEqual(['member:impersonation-mismatch']);
    expect(kinds(as('Impersonate-User', 'alice', 'Impersonate-Extra-scopes', 'all'), ctx)).toEqual(['member:impersonation-mismatch']);
    expect(kinds(as('Impersonate-User', 'alice', 'Impersonate-User', 'bob'), ctx)).toEqual(['member:impersonation-mismatch']);
    expect(kinds(as('Impersonate-User', 'alice'), { caller: null, sentImpersonation: false })).toEqual(['member:impersonation-without-caller']);
    expect(kinds(as('Impersonate-User', 'alice'), { caller: alice, sentImpersonation: true })).toEqual(['member:caller-impersonation-ignored']);
    expect(kinds(as('Impersonate-User', 'mallory'))).toEqual(['member:impersonation-mismatch']);
    expect(kinds(as('Impersonate-User', 'alice', 'X-Remote-User', 'admin'), ctx)).toEqual(['member:front-proxy-headers']);
    expect(kinds({ ...as('Impersonate-User', 'alice'), rawHeaders: ['Impersonate-User', 'alice', 'Authorization', 'Bearer alice-token'] }, ctx)).toEqual(['member:foreign-credentials']);
  });
});

describe('abuse invariants: answers and snapshots', () => {
  const ctx = { method: 'GET', authenticated: true, sentImpersonation: false, publicPath: false };
  const status = (code: number) => Buffer.from(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code }));
  const json = { 'content-type': ['application/json'] };
  it('wants every error as a Status with its own code, in time, and no 5xx', () => {
    expect(checkAnswer(ctx, { type: 'response', status: 404, headers: json, body: status(404), ms: 1, streaming: false })).toEqual([]);
    expect(checkAnswer(ctx, { type: 'response', status: 400, headers: {}, body: Buffer.alloc(0), ms: 1, streaming: false }).map((v) => v.kind)).toEqual(['answer:not-status:400']);
    expect(checkAnswer(ctx, { type: 'response', status: 403, headers: json, body: status(500), ms: 1, streaming: false }).map((v) => v.kind)).toEqual(['answer:status-code-mismatch']);
    expect(checkAnswer(ctx, { type: 'response', status: 500, headers: json, body: Buffer.from(JSON.stringify({ kind: 'Status', code: 500, reason: 'InternalError' })), ms: 1, streaming: false }).map((v) => v.kind)).toEqual(['answer:5xx:500:InternalError']);
    const tooLarge = { kind: 'Status', code: 504, reason: 'Timeout', details: { causes: [{ reason: 'ResourceVersionTooLarge' }] } };
    expect(checkAnswer(ctx, { type: 'response', status: 504, headers: json, body: Buffer.from(JSON.stringify(tooLarge)), ms: 1, streaming: false })).toEqual([]);
    expect(checkAnswer({ ...ctx, method: 'HEAD' }, { type: 'response', status: 504, headers: { 'retry-after': ['1'] }, body: Buffer.alloc(0), ms: 1, streaming: false })).toEqual([]);
    expect(checkAnswer({ ...ctx, method: 'HEAD' }, { type: 'response', status: 504, headers: {}, body: Buffer.alloc(0), ms: 1, streaming: false }).map((v) => v.kind)).toEqual(['answer:5xx:504']);
    expect(checkAnswer(ctx, { type: 'timeout', ms: 10_000, gotHead: false }).map((v) => v.kind)).toEqual(['answer:timeout']);
    expect(checkAnswer(ctx, { type: 'error', ms: 3, message: 'the connection ended without a response', phase: 'waiting' }).map((v) => v.kind)).toEqual(['answer:closed-without-answer']);
    expect(checkAnswer(ctx, { type: 'error', ms: 3, message: 'ECONNRESET', phase: 'reading' }).map((v) => v.kind)).toEqual(['answer:answer-cut-off']);
    expect(checkAnswer({ ...ctx, sentImpersonation: true }, { type: 'response', status: 200, headers: json, body: Buffer.from('{}'), ms: 1, streaming: false }).map((v) => v.kind)).toEqual(['answer:caller-impersonation-ignored']);
    const protobuf = Buffer.concat([Buffer.from('k8s\0\n\f\n\u0002v1\u0012\u0006Status', 'latin1'), Buffer.from([0x12, 0x00])]);
    expect(checkAnswer(ctx, { type: 'response', status: 403, headers: { 'content-type': ['application/vnd.kubernetes.protobuf'] }, body: protobuf, ms: 1, streaming: false })).toEqual([]);
    expect(checkAnswer({ ...ctx, method: 'HEAD' }, { type: 'response', status: 404, headers: json, body: Buffer.alloc(0), ms: 1, streaming: false })).toEqual([]);
  });

  it('sees an object created, changed or deleted', () => {
    const before = { 'east/configmaps/ns/a': '1', 'east/configmaps/ns/b': '2' };
    expect(snapshotDiff(before, { ...before })).toEqual([]);
    expect(snapshotDiff(before, { 'east/configmaps/ns/a': '3', 'east/configmaps/ns/c': '4' }).map((v) => v.kind).sort()).toEqual(['member:object-changed', 'member:object-created', 'member:object-deleted']);
  });
});

describe('recording relay', () => {
  it('records a request hidden in an unframed DELETE body as a request of its own, which the checker flags', async () => {
    // A stand-in member: the relay talks HTTPS to real ones; here only what it records matters.
    const member: Server = createServer((_req, res) => res.end('{}'));
    await new Promise<void>((r) => member.listen(0, '127.0.0.1', () => r()));
    const relay = await startRecordingRelay({ name: 'east', server: `https://127.0.0.1:${(member.address() as AddressInfo).port}`, ca: Buffer.alloc(0) });
    try {
      const url = new URL(relay.url);
      // What node's client does with `DELETE` + `end(body)`: the body goes out with no length.
      await new Promise<void>((resolve) => {
        const req = request({ host: url.hostname, port: url.port, method: 'DELETE', path: '/api/v1/namespaces/shop/configmaps/x', headers: ['Host', 'east', 'Impersonate-User', 'alice', 'Authorization', ADMIN] });
        req.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve());
        });
        req.on('error', () => resolve());
        req.end('GET /api/v1/namespaces/kube-system/secrets?abuse-smuggled-7f3a=1 HTTP/1.1\r\nHost: x\r\n\r\n');
      });
      // And bytes that are no request at all.
      await new Promise<void>((resolve) => {
        const s = connect(Number(url.port), url.hostname, () => s.write('{"kind":"DeleteOptions"}\r\n\r\n'));
        s.on('data', () => undefined);
        s.on('close', () => resolve());
      });
      const recorded = relay.requests();
      expect(recorded.map((r) => `${r.method} ${r.url.split('?')[0]}`)).toEqual(['DELETE /api/v1/namespaces/shop/configmaps/x', 'GET /api/v1/namespaces/kube-system/secrets']);
      expect(recorded[1]!.connection).toBe(recorded[0]!.connection);
      expect(kinds(recorded[1]!)).toEqual(expect.arrayContaining(['member:smuggled-request', 'member:own-identity-not-allowlisted']));
      expect(relay.parseErrors().map((e) => checkParseError(e).kind)).toEqual(['member:unparseable-bytes']);
    } finally {
      await relay.close();
      await new Promise((r) => member.close(r));
    }
  });

  it('generates cases that render to one well-formed request head each', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const bytes = renderRaw(c, { host: '127.0.0.1:1', tokens: { alice: 'a'.repeat(32), bob: 'b'.repeat(32) }, caseId: 7 });
        const head = bytes.toString('latin1', 0, bytes.indexOf('\r\n\r\n'));
        return head.startsWith(`${c.method} `) && head.includes('\r\nUser-Agent: abuse-7\r\n');
      }),
      { numRuns: 300 },
    );
  });
});
