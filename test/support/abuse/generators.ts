import fc from 'fast-check';

/**
 * fast-check generators of hostile requests to flotilla, and how a generated case becomes bytes.
 * A case is a small description (bodies of a MiB or 10,000 levels are made when sent), so a
 * hundred thousand of them fit in memory and a counterexample prints in a few lines.
 */
export const MEMBERS = ['east', 'west', 'north'] as const;
/** The namespaces the suite aims at; nobody but the fleet admin may change anything in them. */
export const TARGET_NAMESPACES = ['abuse-canary', 'kube-system', 'default', 'kube-public'] as const;
export const CANARY_NS = 'abuse-canary';
/** Put in every request hidden in a body: a member that sees it was handed an unframed body. */
export const SMUGGLE_MARKER = 'abuse-smuggled-7f3a';

/** A fleet user the suite holds a token of (`alice`, `admin@acme`), or nobody: no credentials, or credentials that do not hold. */
export type CallerName = string;
const NOBODY = new Set(['anonymous', 'garbage']);
export type AuthForm = 'bearer' | 'bearer-lowercase' | 'basic' | 'bearer-extra-word' | 'two-headers' | 'query-token';

export type BodySpec =
  | { kind: 'none' }
  | { kind: 'text'; text: string }
  | { kind: 'deep'; depth: number; shape: 'array' | 'object' | 'with-rv' | 'patch-with-rv' }
  | { kind: 'large'; bytes: number }
  | { kind: 'smuggle'; prefix: string; method: string; path: string }
  | { kind: 'binary'; bytes: number[] };

export interface AbuseCase {
  caller: CallerName;
  authForm: AuthForm;
  transport: 'raw' | 'node';
  method: string;
  /** The request target exactly as sent (path and query). */
  target: string;
  headers: [string, string][];
  body: BodySpec;
  /**
   * How the client frames its body (raw transport only; node's client frames by itself): `both`
   * sends Content-Length and Transfer-Encoding (a server must refuse it), `short` a Content-Length
   * a few bytes short (the rest reads as a next request), `none` no framing at all.
   */
  framing: 'length' | 'chunked' | 'none' | 'both' | 'short';
  upgrade?: 'websocket' | 'spdy';
}

// ---------------------------------------------------------------------------------------------
// Paths

const TRAVERSAL = [
  '.', '..', '%2e', '%2E', '%2e%2e', '%2E%2e', '%2e%2E', '%2E%2E', '.%2e', '%2e.', '..%2f', '%2e%2e%2f', '..%2F..', '%252e', '%252e%252e',
  '%2f', '%2F', '', '..;', ';', '%00', '%c0%ae%c0%ae', '%ef%bc%8e%ef%bc%8e', '%5c..', '..\\', '%2e%2e%5c', '.../', '%20..', '..%20',
] as const;

const SENSITIVE_TAILS = [
  'api/v1/namespaces/kube-system/secrets',
  'api/v1/secrets',
  `api/v1/namespaces/${CANARY_NS}/secrets/canary`,
  `api/v1/namespaces/${CANARY_NS}/configmaps/canary`,
  `api/v1/namespaces/${CANARY_NS}/configmaps`,
  `api/v1/namespaces/${CANARY_NS}`,
  'api/v1/namespaces',
  'apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
  `apis/rbac.authorization.k8s.io/v1/namespaces/${CANARY_NS}/rolebindings/canary`,
  `api/v1/namespaces/${CANARY_NS}/serviceaccounts/canary/token`,
  `api/v1/namespaces/${CANARY_NS}/pods/canary-east/exec?command=id`,
  `api/v1/namespaces/${CANARY_NS}/pods/canary-east/log`,
  'api/v1/nodes/x/proxy/configz',
  'apis/authentication.k8s.io/v1/tokenreviews',
  'apis/authorization.k8s.io/v1/subjectaccessreviews',
  'version',
  'openapi/v2',
] as const;

const BASES = [
  '/openapi/v3', '/openapi/v2', '/openapi/v3/apis/apps/v1', '/openapi/v3/api/v1', '/version', '/api', '/apis', '/api/v1', '/apis/apps/v1',
  '/healthz', '/metrics', '/status', `/api/v1/namespaces/${CANARY_NS}/pods/canary-east/log`, `/api/v1/namespaces/${CANARY_NS}/pods/canary-east/proxy`,
  `/api/v1/namespaces/${CANARY_NS}/configmaps`, `/api/v1/namespaces/${CANARY_NS}/configmaps/canary-east`, '/api/v1/pods', '/apis/apps/v1/deployments',
] as const;

const UNKNOWN_CLUSTERS = ['nope', 'EAST', 'east%2f..', '%2e%2e', '..', '.', 'east%2F', 'east/..', 'east%00', 'e%61st', '%65ast', 'x'.repeat(70)] as const;

const clusterPrefix = fc.oneof(
  { weight: 5, arbitrary: fc.constant('') },
  { weight: 4, arbitrary: fc.constantFrom(...MEMBERS).map((m) => `/clusters/${m}`) },
  { weight: 2, arbitrary: fc.constantFrom(...UNKNOWN_CLUSTERS).map((n) => `/clusters/${n}`) },
  { weight: 1, arbitrary: fc.constantFrom('/clusters', '/clusters/', '/clusters//east', '/CLUSTERS/east', '/clusters/east/clusters/west') },
);

const API_ROOTS = [
  '/api/v1', '/apis/apps/v1', '/apis/rbac.authorization.k8s.io/v1', '/apis/authorization.k8s.io/v1', '/apis/authentication.k8s.io/v1',
  '/apis/nope.example.com/v1', '/api/v2', '/apis/apps', '/apis/coordination.k8s.io/v1',
] as const;
const RESOURCES = [
  'pods', 'configmaps', 'secrets', 'serviceaccounts', 'namespaces', 'nodes', 'deployments', 'rolebindings', 'clusterrolebindings', 'roles',
  'services', 'events', 'tokenreviews', 'subjectaccessreviews', 'selfsubjectaccessreviews', 'selfsubjectreviews', 'leases', 'nope',
] as const;
const NAMES = ['canary', 'canary-east', 'canary-west', 'canary-north', 'kube-root-ca.crt', 'default', 'kubernetes', 'nope', 'canary-east:8080', 'http:canary-east:80', 'a:b:c:d', 'kube-system', CANARY_NS] as const;
const SUBRESOURCES = [
  'status', 'scale', 'log', 'exec', 'attach', 'portforward', 'proxy', 'proxy/', 'proxy/x/y', 'proxy/..', 'eviction', 'binding', 'finalize', 'token', 'ephemeralcontainers', 'status/x',
] as const;

/** Percent-encodes some letters of a path (`%73ecrets`), which a member decodes. */
function encodeSome(path: string, picks: number[]): string {
  if (picks.length === 0) return path;
  const chars = [...path];
  for (const p of picks) {
    const i = p % chars.length;
    if (/[a-z]/.test(chars[i]!)) chars[i] = `%${chars[i]!.charCodeAt(0).toString(16)}`;
  }
  return chars.join('');
}

/** `value` with weight `some`, undefined with weight `none`. */
function sometimes<T>(some: number, none: number, value: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: none, arbitrary: fc.constant(undefined) }, { weight: some, arbitrary: value });
}

const mutation = fc.record({
  inserts: fc.array(fc.tuple(fc.nat(), fc.constantFrom(...TRAVERSAL)), { maxLength: 3 }),
  encode: fc.array(fc.nat(), { maxLength: 3 }),
  trailingSlash: fc.boolean(),
});

function mutate(path: string, m: { inserts: [number, string][]; encode: number[]; trailingSlash: boolean }): string {
  const segs = path.split('/').slice(1);
  for (const [pos, token] of m.inserts) segs.splice(pos % (segs.length + 1), 0, token);
  let out = `/${segs.join('/')}`;
  out = encodeSome(out, m.encode);
  return m.trailingSlash ? `${out}/` : out;
}

const resourcePath = fc
  .record({
    prefix: clusterPrefix,
    root: fc.constantFrom(...API_ROOTS),
    namespace: sometimes(2, 1, fc.constantFrom(...TARGET_NAMESPACES, 'no-such-ns')),
    resource: fc.constantFrom(...RESOURCES),
    name: sometimes(1, 1, fc.constantFrom(...NAMES)),
    sub: sometimes(1, 2, fc.constantFrom(...SUBRESOURCES)),
    mutation: sometimes(1, 3, mutation),
  })
  .map(({ prefix, root, namespace, resource, name, sub, mutation: m }) => {
    let p = `${prefix}${root}${namespace !== undefined ? `/namespaces/${namespace}` : ''}/${resource}`;
    if (name !== undefined) p += `/${name}${sub !== undefined ? `/${sub}` : ''}`;
    return m ? mutate(p, m) : p;
  });

const traversalPath = fc
  .tuple(clusterPrefix, fc.constantFrom(...BASES), fc.array(fc.constantFrom(...TRAVERSAL), { minLength: 1, maxLength: 7 }), fc.constantFrom(...SENSITIVE_TAILS))
  .map(([prefix, base, trav, tail]) => `${prefix}${base}/${trav.join('/')}/${tail}`);

const otherPath = fc.oneof(
  fc.constantFrom(
    '/healthz', '/livez', '/readyz', '/metrics', '/status', '/version', '/openapi/v2', '/openapi/v3', '/openapi/v3/api/v1', '/openapi/v3/apis/apps/v1',
    '/openapi/v3/apis/nope/v1', '/api', '/apis', '/api/v1', '/apis/apps/v1', '/apis/apps', '/', '/.well-known/openid-configuration', '/logs',
    '/api/v1/namespaces/abuse-canary/pods/canary-east/exec?command=id&stdout=true', '/openapi/v3/../../api/v1/namespaces/kube-system/secrets',
    '/openapi/v3/%2e%2e/%2e%2e/api/v1/namespaces/kube-system/secrets', '/clusters/east/openapi/v3/%2e%2e/%2e%2e/api/v1/secrets',
    '/version/../api/v1/namespaces/kube-system/secrets', '/openapi/v2?x=/../../api/v1/secrets', '//api/v1/pods', '/api//v1/pods',
  ),
  fc.constantFrom(...MEMBERS).map((m) => `/clusters/${m}/openapi/v3`),
);

/** Targets that are not origin-form paths (only the raw client can send these). */
const oddTarget = fc.constantFrom('*', 'http://127.0.0.1/api/v1/pods', 'https://evil.example/api/v1/namespaces', 'api/v1/pods', '/api/v1/pods#frag', '/api/v1/pods?', '%2fapi/v1/pods');

export const pathArb = fc.oneof({ weight: 8, arbitrary: resourcePath }, { weight: 2, arbitrary: traversalPath }, { weight: 2, arbitrary: otherPath });

// ---------------------------------------------------------------------------------------------
// Queries

function b64url(s: string): string {
  return Buffer.from(s).toString('base64url');
}

const memberRV = fc.oneof(fc.constantFrom('1', '0', '-1', '99999999999999999999', '1e3', '', ' 1', '0x10'), fc.nat().map(String), fc.string({ maxLength: 6 }));
const forgedRV = fc.oneof(
  fc.dictionary(fc.constantFrom(...MEMBERS, 'nope', 'EAST', '../x', ''), memberRV, { maxKeys: 4 }).map((d) => b64url(JSON.stringify(d))),
  fc.constantFrom(b64url('[]'), b64url('null'), b64url('"x"'), b64url('{"east":1}'), b64url('{"__proto__":{"x":"1"}}'), b64url(`{"east":"${'9'.repeat(400)}"}`), b64url('{'), 'AAAA', '!!!', '%'),
);
const forgedContinue = fc.oneof(
  fc.record({ rv: fc.oneof(forgedRV, fc.string({ maxLength: 8 })), start: fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('pods\u0005kube-system', '\u0005\u0005', '../../')), snap: sometimes(1, 1, fc.string({ maxLength: 8 })) }).map((c) => b64url(JSON.stringify(c))),
  fc.constantFrom(b64url('{"rv":1,"start":2}'), b64url('null'), 'garbage', b64url('{"rv":"x"}'), ''),
);
const selector = fc.oneof(
  fc.constantFrom('a=b', 'a in (x,y)', 'a notin (', '!a', 'a,,b', '(', 'a==b==c', 'metadata.name=canary', 'metadata.name!=x,metadata.namespace=abuse-canary', 'spec.nodeName=', 'status.phase=Running', 'x'.repeat(300), 'a=' + 'b'.repeat(70), '%', '\u0000', 'a in (' + 'x,'.repeat(100) + 'y)'),
  fc.string({ maxLength: 20 }),
);

const enc = (s: string) => encodeURIComponent(s);
const queryParam: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('watch=true', 'watch=1', 'watch=false', 'watch=garbage', 'allowWatchBookmarks=true', 'sendInitialEvents=true', 'resourceVersionMatch=NotOlderThan', 'resourceVersionMatch=Exact', 'resourceVersionMatch=garbage'),
  fc.oneof(memberRV, forgedRV).map((rv) => `resourceVersion=${enc(rv)}`),
  fc.oneof(fc.constantFrom('0', '1', '-1', '9007199254740993', '1e309', '99999999999999999999999', 'abc', '', '1.5', ' 5'), fc.nat().map(String)).map((l) => `limit=${enc(l)}`),
  forgedContinue.map((c) => `continue=${enc(c)}`),
  fc.constantFrom('0', '1', '-1', '99999999999', 'abc', '1.5', '', '2').map((t) => `timeoutSeconds=${t}`),
  selector.map((s) => `labelSelector=${enc(s)}`),
  selector.map((s) => `fieldSelector=${enc(s)}`),
  fc.constantFrom('dryRun=All', 'dryRun=garbage', 'dryRun=', 'propagationPolicy=Foreground', 'propagationPolicy=Orphan', 'propagationPolicy=garbage', 'gracePeriodSeconds=0', 'gracePeriodSeconds=-1', 'orphanDependents=true'),
  fc.constantFrom('includeObject=Object', 'includeObject=None', 'includeObject=garbage', 'pretty=true', 'fieldManager=x', 'force=true', 'fieldValidation=Strict', 'fieldValidation=garbage'),
  fc.constantFrom('follow=true', 'container=x', 'tailLines=-1', 'sinceSeconds=1', 'limitBytes=1', 'command=id', 'command=sh&command=-c&command=id', 'stdin=true', 'tty=true', 'stdout=true', 'ports=8080'),
  fc.constantFrom('a=%', '%zz', '&&&', '=', 'a=b%0d%0aX-Injected:%201', '%2e%2e=1', 'x=/../../api/v1/secrets', 'watch=true&watch=false', 'resourceVersion=1&resourceVersion=2', 'limit=1&limit=-1', `impersonate-user=${enc('system:admin')}`),
);
export const queryArb = fc.array(queryParam, { maxLength: 4 }).map((ps) => (ps.length ? `?${ps.join('&')}` : ''));

// ---------------------------------------------------------------------------------------------
// Headers

const ACCEPTS = [
  'application/json', 'application/vnd.kubernetes.protobuf', 'application/vnd.kubernetes.protobuf;stream=watch', 'application/yaml', 'text/html', '*/*',
  'application/json;as=Table;v=v1;g=meta.k8s.io', 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json', '*/*;as=Table', 'application/json;q=0',
  'application/json;q=0, */*;q=0', 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io', 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io',
  'application/json;as=Table;v=v9;g=meta.k8s.io', 'application/json;as=Table;g=meta.k8s.io;v=v1beta1', 'application/jsonx', '', ';;;', 'application/json;stream=watch',
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', 'application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io', 'image/png', 'text/plain;q=1, application/json;q=0',
] as const;
const CONTENT_TYPES = [
  'application/json', 'application/merge-patch+json', 'application/strategic-merge-patch+json', 'application/json-patch+json', 'application/apply-patch+yaml',
  'application/yaml', 'application/vnd.kubernetes.protobuf', 'text/plain', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', '', 'application/json; charset=utf-16', 'application/json;;',
] as const;

const headerArb: fc.Arbitrary<[string, string]> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...ACCEPTS).map((v): [string, string] => ['Accept', v]) },
  { weight: 3, arbitrary: fc.constantFrom(...CONTENT_TYPES).map((v): [string, string] => ['Content-Type', v]) },
  {
    weight: 2,
    arbitrary: fc.constantFrom<[string, string]>(
      ['Impersonate-User', 'system:admin'], ['Impersonate-User', 'flotilla-admin'], ['Impersonate-User', 'alice'], ['Impersonate-User', 'bob'], ['Impersonate-User', 'system:serviceaccount:kube-system:default'],
      ['Impersonate-Group', 'system:masters'], ['Impersonate-Group', 'team-a'], ['Impersonate-Uid', 'uid-admin'], ['Impersonate-Extra-scopes', 'all'], ['Impersonate-Extra-%2Fevil', 'x'], ['impersonate-user', ''],
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom<[string, string]>(['X-Remote-User', 'flotilla-admin'], ['X-Remote-Group', 'system:masters'], ['X-Remote-Extra-scopes', 'all']) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<[string, string]>(
      ['Expect', '100-continue'], ['X-Forwarded-For', '10.0.0.1'], ['Accept-Encoding', 'gzip'], ['If-None-Match', '*'], ['Connection', 'keep-alive, Authorization'],
      ['Connection', 'Impersonate-User'], ['X-Stream-Protocol-Version', 'v4.channel.k8s.io'], ['Warning', '299 - "x"'],
      ['Host', 'kubernetes.default.svc'], ['Forwarded', 'for=1.2.3.4'], ['Cookie', 'a=b'], ['Origin', 'https://evil.example'],
    ),
  },
);
export const headersArb = fc.array(headerArb, { maxLength: 4 });

// ---------------------------------------------------------------------------------------------
// Bodies

const cm = (name: string, extra: Record<string, unknown> = {}) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: CANARY_NS, ...extra }, data: { pwned: 'yes' } });
const TEXT_BODIES = [
  '{', '}', 'null', '[]', '"x"', '1', '{"a":', '{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]}', '{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}',
  '{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"resourceVersion":"1"}}', '{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":-5}',
  cm('canary'), cm('canary-east'), cm('abuse-new'), cm('canary-east', { resourceVersion: 'eyJlYXN0IjoiMSJ9' }), cm('canary-east', { annotations: { 'search.flotilla.io/cluster': 'nope' } }),
  cm('abuse-new', { annotations: { 'search.flotilla.io/cluster': 'east' } }), cm('abuse-new', { annotations: { 'search.flotilla.io/cluster': '../../' } }),
  '[{"op":"replace","path":"/data/pwned","value":"yes"}]', '[{"op":"test","path":"/metadata/resourceVersion","value":"eyJlYXN0IjoiMSJ9"}]', '{"data":{"pwned":"yes"}}',
  '{"metadata":{"resourceVersion":"!!!"}}', '{"metadata":{"resourceVersion":"eyJub3BlIjoiMSJ9"}}', '{"items":[{"metadata":{"resourceVersion":"eyJlYXN0IjoiMSJ9"}}]}',
  'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: abuse-new\n', 'a: [', 'metadata: {resourceVersion: "x"}\n', '\u0000\u0001', '\ufeff{}', '{"__proto__":{"polluted":true},"metadata":{"resourceVersion":"eyJlYXN0IjoiMSJ9"}}',
  '{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"*","resource":"*"}}}',
  '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"garbage"}}',
  '{"apiVersion":"v1","kind":"Eviction","metadata":{"name":"canary-east","namespace":"abuse-canary"}}',
] as const;

const smuggleTargets = fc.constantFrom(
  ['GET', '/api/v1/namespaces/kube-system/secrets'], ['DELETE', `/api/v1/namespaces/${CANARY_NS}/configmaps/canary`], ['GET', '/api/v1/secrets'],
  ['POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings'], ['GET', '/version'],
);

// withCrossShrink: a counterexample's body shrinks towards no body at all, its method towards GET.
export const bodyArb: fc.Arbitrary<BodySpec> = fc.oneof(
  { withCrossShrink: true },
  { weight: 6, arbitrary: fc.constant<BodySpec>({ kind: 'none' }) },
  { weight: 5, arbitrary: fc.constantFrom(...TEXT_BODIES).map((text): BodySpec => ({ kind: 'text', text })) },
  { weight: 1, arbitrary: fc.string({ maxLength: 64 }).map((text): BodySpec => ({ kind: 'text', text })) },
  { weight: 1, arbitrary: fc.record({ depth: fc.constantFrom(100, 10_000, 100_000), shape: fc.constantFrom('array' as const, 'object' as const, 'with-rv' as const, 'patch-with-rv' as const) }).map((d): BodySpec => ({ kind: 'deep', ...d })) },
  { weight: 1, arbitrary: fc.constantFrom(1024 * 1024, 4 * 1024 * 1024 + 1).map((bytes): BodySpec => ({ kind: 'large', bytes })) },
  { weight: 2, arbitrary: fc.record({ prefix: fc.constantFrom('', '{}', '{"kind":"DeleteOptions","apiVersion":"v1"}\r\n'), t: smuggleTargets }).map(({ prefix, t }): BodySpec => ({ kind: 'smuggle', prefix, method: t[0]!, path: t[1]! })) },
  { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 32 }).map((bytes): BodySpec => ({ kind: 'binary', bytes })) },
);

// ---------------------------------------------------------------------------------------------
// Whole cases

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;
const WEIRD_METHODS = ['PROPFIND', 'TRACE', 'FOO', 'get', 'PURGE', 'M-SEARCH', 'CONNECT', 'BREW', 'G\tET'] as const;

export const methodArb = fc.oneof(
  { withCrossShrink: true },
  { weight: 10, arbitrary: fc.constantFrom('GET' as string) },
  { weight: 12, arbitrary: fc.constantFrom<string>(...METHODS) },
  { weight: 1, arbitrary: fc.constantFrom<string>(...WEIRD_METHODS) },
);

const callerArb = fc.oneof({ weight: 5, arbitrary: fc.constantFrom<CallerName>('alice', 'bob') }, { weight: 1, arbitrary: fc.constantFrom<CallerName>('anonymous', 'garbage') });
const authFormArb = fc.oneof({ weight: 12, arbitrary: fc.constant<AuthForm>('bearer') }, { weight: 1, arbitrary: fc.constantFrom<AuthForm>('bearer-lowercase', 'basic', 'bearer-extra-word', 'two-headers', 'query-token') });
const transportArb = fc.oneof({ weight: 3, arbitrary: fc.constant('raw' as const) }, { weight: 1, arbitrary: fc.constant('node' as const) });
const framingArb = fc.oneof({ weight: 12, arbitrary: fc.constant('length' as const) }, { weight: 3, arbitrary: fc.constant('chunked' as const) }, { weight: 1, arbitrary: fc.constantFrom('none' as const, 'both' as const, 'short' as const) });
const upgradeArb = sometimes(1, 15, fc.constantFrom('websocket' as const, 'spdy' as const));

function joinQuery(path: string, query: string): string {
  return path.includes('?') ? `${path}${query.replace(/^\?/, '&')}` : `${path}${query}`;
}

/** Anything: paths, queries, headers, bodies and methods drawn freely from the hostile sets. */
const wildCaseArb: fc.Arbitrary<AbuseCase> = fc
  .record({
    caller: callerArb,
    authForm: authFormArb,
    transport: transportArb,
    method: methodArb,
    path: fc.oneof({ weight: 20, arbitrary: pathArb }, { weight: 1, arbitrary: oddTarget }),
    query: queryArb,
    headers: headersArb,
    body: bodyArb,
    framing: framingArb,
    upgrade: upgradeArb,
  })
  .map(({ path, query, upgrade, ...rest }): AbuseCase => {
    const c: AbuseCase = { ...rest, target: joinQuery(path, query) };
    if (upgrade) c.upgrade = upgrade;
    return c;
  });

/**
 * Requests a client could mean: the canaries' real URLs (through a member's prefix or not), reads
 * and watches of what flotilla caches with every Accept, writes with real bodies, the streaming
 * subresources. These get past flotilla's own checks, so they are what reaches the members.
 */
const COLLECTIONS = [
  `/api/v1/namespaces/${CANARY_NS}/configmaps`, `/api/v1/namespaces/${CANARY_NS}/pods`, `/api/v1/namespaces/${CANARY_NS}/secrets`, `/api/v1/namespaces/${CANARY_NS}/serviceaccounts`,
  `/apis/apps/v1/namespaces/${CANARY_NS}/deployments`, `/apis/rbac.authorization.k8s.io/v1/namespaces/${CANARY_NS}/rolebindings`, '/api/v1/namespaces', '/api/v1/nodes', '/api/v1/pods',
  '/api/v1/configmaps', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', '/api/v1/namespaces/kube-system/configmaps', '/api/v1/namespaces/kube-system/secrets',
] as const;
const PLAUSIBLE_NAMES = ['canary', 'canary-east', 'canary-west', 'canary-north', 'kube-root-ca.crt', 'default', CANARY_NS, 'kube-system', 'nope'] as const;
const PLAUSIBLE_SUBS = ['status', 'scale', 'log', 'exec?command=id&stdout=true', 'attach?stdout=true', 'portforward?ports=8080', 'proxy/', 'proxy/x', 'eviction', 'token', 'finalize', 'binding'] as const;
const PLAUSIBLE_QUERIES = [
  '', '', '', '?watch=true&timeoutSeconds=1', '?watch=1&timeoutSeconds=1&allowWatchBookmarks=true', '?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1',
  '?limit=1', '?dryRun=All', '?propagationPolicy=Foreground&dryRun=All', '?fieldManager=abuse&force=true', '?follow=true', '?labelSelector=a%3Db', '?fieldSelector=metadata.name%3Dcanary',
] as const;
const PLAUSIBLE_CONTENT_TYPES = ['application/json', 'application/merge-patch+json', 'application/strategic-merge-patch+json', 'application/json-patch+json', 'application/apply-patch+yaml', 'application/vnd.kubernetes.protobuf', 'application/yaml'] as const;

const plausibleCaseArb: fc.Arbitrary<AbuseCase> = fc
  .record({
    caller: callerArb,
    authForm: authFormArb,
    transport: transportArb,
    method: fc.oneof({ weight: 5, arbitrary: fc.constant('GET') }, { weight: 6, arbitrary: fc.constantFrom('POST', 'PUT', 'PATCH', 'DELETE') }, { weight: 1, arbitrary: fc.constantFrom('HEAD', 'OPTIONS') }),
    prefix: fc.oneof({ weight: 1, arbitrary: fc.constant('') }, { weight: 2, arbitrary: fc.constantFrom(...MEMBERS).map((m) => `/clusters/${m}`) }),
    collection: fc.constantFrom(...COLLECTIONS),
    name: sometimes(2, 1, fc.constantFrom(...PLAUSIBLE_NAMES)),
    sub: sometimes(1, 2, fc.constantFrom(...PLAUSIBLE_SUBS)),
    query: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...PLAUSIBLE_QUERIES) }, { weight: 1, arbitrary: queryArb }),
    accept: sometimes(1, 1, fc.constantFrom(...ACCEPTS)),
    contentType: fc.constantFrom(...PLAUSIBLE_CONTENT_TYPES),
    headers: fc.array(headerArb, { maxLength: 2 }),
    body: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...TEXT_BODIES).map((text): BodySpec => ({ kind: 'text', text })) }, { weight: 2, arbitrary: bodyArb }),
    framing: framingArb,
    upgrade: upgradeArb,
  })
  .map(({ prefix, collection, name, sub, query, accept, contentType, headers, body, method, upgrade, ...rest }): AbuseCase => {
    let path = `${prefix}${collection}`;
    if (name !== undefined) path += `/${name}${sub !== undefined ? `/${sub}` : ''}`;
    const h: [string, string][] = [...(accept !== undefined ? [['Accept', accept] as [string, string]] : []), ...headers];
    const writes = method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS';
    if (writes) h.push(['Content-Type', contentType]);
    const c: AbuseCase = { ...rest, method, target: joinQuery(path, query), headers: h, body: writes || body.kind === 'smuggle' ? body : { kind: 'none' } };
    if (upgrade) c.upgrade = upgrade;
    return c;
  });

export const caseArb: fc.Arbitrary<AbuseCase> = fc.oneof({ weight: 3, arbitrary: wildCaseArb }, { weight: 2, arbitrary: plausibleCaseArb });

// ---------------------------------------------------------------------------------------------
// From a case to bytes

export interface RenderContext {
  /** host:port of flotilla, for the Host header. */
  host: string;
  /** Bearer tokens of the named callers. */
  tokens: Record<string, string>;
  /** Becomes the User-Agent (`abuse-<id>`): how member requests are matched to their case. */
  caseId: number;
}

export function bodyBytes(b: BodySpec, host: string): Buffer | undefined {
  switch (b.kind) {
    case 'none':
      return undefined;
    case 'text':
      return Buffer.from(b.text);
    case 'binary':
      return Buffer.from(b.bytes);
    case 'large': {
      const head = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"canary-east","namespace":"${CANARY_NS}","resourceVersion":"eyJlYXN0IjoiMSJ9"},"data":{"big":"`;
      const tail = '"}}';
      return Buffer.from(head + 'x'.repeat(Math.max(0, b.bytes - head.length - tail.length)) + tail);
    }
    case 'deep': {
      const d = b.depth;
      if (b.shape === 'array') return Buffer.from('['.repeat(d) + ']'.repeat(d));
      if (b.shape === 'object') return Buffer.from('{"a":'.repeat(d) + '1' + '}'.repeat(d));
      if (b.shape === 'with-rv') return Buffer.from(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"canary-east","resourceVersion":"eyJlYXN0IjoiMSJ9"},"x":${'['.repeat(d)}${']'.repeat(d)}}`);
      return Buffer.from(`[{"op":"test","path":"/metadata/resourceVersion","value":"eyJlYXN0IjoiMSJ9"},{"op":"add","path":"/x","value":${'{"a":'.repeat(d)}1${'}'.repeat(d)}}]`);
    }
    case 'smuggle': {
      const sep = b.path.includes('?') ? '&' : '?';
      const inner = `${b.method} ${b.path}${sep}${SMUGGLE_MARKER}=1 HTTP/1.1\r\nHost: ${host}\r\nX-Abuse: ${SMUGGLE_MARKER}\r\nContent-Length: 0\r\n\r\n`;
      return Buffer.from(b.prefix + inner);
    }
  }
}

const UPGRADE_HEADERS: Record<'websocket' | 'spdy', [string, string][]> = {
  websocket: [['Connection', 'Upgrade'], ['Upgrade', 'websocket'], ['Sec-WebSocket-Version', '13'], ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ=='], ['Sec-WebSocket-Protocol', 'v5.channel.k8s.io']],
  spdy: [['Connection', 'Upgrade'], ['Upgrade', 'SPDY/3.1'], ['X-Stream-Protocol-Version', 'v4.channel.k8s.io']],
};

/** The Authorization headers and query a case sends, and who that makes the caller. */
export function credentials(c: AbuseCase, tokens: RenderContext['tokens']): { headers: [string, string][]; query: string } {
  if (c.caller === 'anonymous') return { headers: [], query: '' };
  if (c.caller === 'garbage') {
    const forms: Record<AuthForm, [string, string][]> = {
      bearer: [['Authorization', 'Bearer 0123456789abcdef0123456789abcdef']],
      'bearer-lowercase': [['Authorization', 'bearer ']],
      basic: [['Authorization', 'Basic YWRtaW46YWRtaW4=']],
      'bearer-extra-word': [['Authorization', 'Bearer']],
      'two-headers': [['Authorization', 'Negotiate abc'], ['Authorization', 'Bearer x']],
      'query-token': [],
    };
    return { headers: forms[c.authForm], query: c.authForm === 'query-token' ? 'access_token=garbage' : '' };
  }
  const t = tokens[c.caller] ?? 'garbage';
  const forms: Record<AuthForm, [string, string][]> = {
    bearer: [['Authorization', `Bearer ${t}`]],
    'bearer-lowercase': [['Authorization', `bearer ${t}`]],
    basic: [['Authorization', `Basic ${Buffer.from(`${c.caller}:${t}`).toString('base64')}`]],
    'bearer-extra-word': [['Authorization', `Bearer ${t} extra`]],
    'two-headers': [['Authorization', `Bearer ${t}`], ['Authorization', 'Bearer garbage']],
    'query-token': [],
  };
  return { headers: forms[c.authForm], query: c.authForm === 'query-token' ? `access_token=${t}` : '' };
}

/** Who flotilla should take the caller to be: a suite user whose token the case presented correctly. */
export function authenticatedCaller(c: AbuseCase): string | undefined {
  if (NOBODY.has(c.caller)) return undefined;
  return c.authForm === 'bearer' || c.authForm === 'bearer-lowercase' ? c.caller : undefined;
}

/** The suite user whose token is anywhere in the case (an impersonation must be that user or none). */
export function presentedCaller(c: AbuseCase): string | undefined {
  return NOBODY.has(c.caller) ? undefined : c.caller;
}

export function sentImpersonation(c: AbuseCase): boolean {
  return c.headers.some(([n]) => /^impersonate-/i.test(n));
}

function withQuery(target: string, extra: string): string {
  if (!extra) return target;
  return target.includes('?') ? `${target}&${extra}` : `${target}?${extra}`;
}

/** Whether the case goes out as exact bytes (node's client cannot send an upgrade or CONNECT as a plain request). */
export function sentRaw(c: AbuseCase): boolean {
  return c.transport === 'raw' || c.upgrade !== undefined || c.method === 'CONNECT';
}

/** A watch, a followed log or an upgrade: a 2xx answer is not waited out. */
export function isStreaming(c: AbuseCase): boolean {
  return c.upgrade !== undefined || /[?&](watch=(true|1)|follow=true)(&|$)/.test(c.target) || /\/(exec|attach|portforward|proxy)(\/|\?|$)/.test(c.target);
}

export interface Rendered {
  method: string;
  target: string;
  headers: [string, string][];
  body: Buffer | undefined;
}

export function render(c: AbuseCase, ctx: RenderContext): Rendered {
  const cred = credentials(c, ctx.tokens);
  // `{case}` in a header value is the case's id: member requests it causes can be told by it.
  const own = c.headers.map(([n, v]): [string, string] => [n, v.replaceAll('{case}', String(ctx.caseId))]);
  const headers: [string, string][] = [['Host', ctx.host], ['User-Agent', `abuse-${ctx.caseId}`], ...cred.headers, ...own];
  if (c.upgrade) headers.push(...UPGRADE_HEADERS[c.upgrade]);
  return { method: c.method, target: withQuery(c.target, cred.query), headers, body: bodyBytes(c.body, ctx.host) };
}

/** The exact bytes the raw client writes. */
export function renderRaw(c: AbuseCase, ctx: RenderContext): Buffer {
  const r = render(c, ctx);
  const lines = [`${r.method} ${r.target} HTTP/1.1`, ...r.headers.map(([n, v]) => `${n}: ${v}`)];
  let body = r.body ?? Buffer.alloc(0);
  if (r.body !== undefined) {
    const chunked = () => (r.body!.length === 0 ? Buffer.from('0\r\n\r\n') : Buffer.concat([Buffer.from(`${r.body!.length.toString(16)}\r\n`), r.body!, Buffer.from('\r\n0\r\n\r\n')]));
    if (c.framing === 'length') lines.push(`Content-Length: ${r.body.length}`);
    if (c.framing === 'short') lines.push(`Content-Length: ${Math.max(0, r.body.length - 3)}`);
    if (c.framing === 'chunked' || c.framing === 'both') {
      if (c.framing === 'both') lines.push(`Content-Length: ${r.body.length}`);
      lines.push('Transfer-Encoding: chunked');
      body = chunked();
    }
  }
  if (!c.upgrade) lines.push('Connection: close');
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8'), body]);
}

/** A case in a few lines, for reports: the request head as sent, the body described. */
export function describeCase(c: AbuseCase, ctx: RenderContext): string {
  const r = render(c, ctx);
  const head = [`${r.method} ${r.target} HTTP/1.1`, ...r.headers.filter(([n]) => n !== 'Host' && n !== 'User-Agent').map(([n, v]) => `${n}: ${n.toLowerCase() === 'authorization' ? v.replace(/[0-9a-f]{32}/, '<token>') : v}`)].join('\n    ');
  const b = c.body;
  const body =
    b.kind === 'none' ? '' :
    b.kind === 'text' ? `body: ${JSON.stringify(b.text.slice(0, 300))}` :
    b.kind === 'binary' ? `body: ${b.bytes.length} binary bytes` :
    b.kind === 'large' ? `body: a ${b.bytes} byte ConfigMap` :
    b.kind === 'deep' ? `body: JSON nested ${b.depth} deep (${b.shape})` :
    `body: a whole HTTP request (${b.method} ${b.path}?${SMUGGLE_MARKER}=1) after ${JSON.stringify(b.prefix)}`;
  const raw = sentRaw(c);
  return [`caller=${c.caller} auth=${c.authForm} via ${raw ? 'raw TLS' : "node's https client"}${raw && c.body.kind !== 'none' ? ` framing=${c.framing}` : ''}`, `    ${head}`, body ? `    ${body}` : ''].filter(Boolean).join('\n');
}
