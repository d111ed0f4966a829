import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { namespaceCut, storedMetadataAt } from '../../../src/tenancy/object-bytes.js';
import { Tenant } from '../../../src/tenancy/tenant.js';

/**
 * The in-place edit of a tenant's stored objects: the prefix cut out of `metadata.namespace`, and
 * nothing else changed, whatever the metadata's layout (the apiserver's field order for built-in
 * kinds, sorted keys for custom resources) and whatever else says "namespace" (a label, an
 * annotation, the spec).
 */
const tenant = new Tenant({ id: 'acme', users: [], groups: [], clusterScoped: {} });
const dns = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/);

const objectArb = fc.record({
  name: dns,
  generateName: fc.option(dns.map((n) => `${n}-`), { nil: undefined }),
  namespace: dns,
  labels: fc.dictionary(fc.constantFrom('app', 'namespace', 'tier', 'acme-x'), fc.oneof(dns, dns.map((n) => `acme-${n}`)), { maxKeys: 3 }),
  note: fc.oneof(fc.constant('"namespace":"acme-x"'), fc.string()),
  sorted: fc.boolean(),
});

type Generated = typeof objectArb extends fc.Arbitrary<infer T> ? T : never;

function stored(o: Generated): { bytes: Buffer; expected: unknown } {
  const typed: Record<string, unknown> = { name: o.name, ...(o.generateName ? { generateName: o.generateName } : {}), namespace: `acme-${o.namespace}`, uid: 'u-1', labels: o.labels, annotations: { note: o.note } };
  const metadata = o.sorted ? Object.fromEntries(Object.entries(typed).sort(([a], [b]) => (a < b ? -1 : 1))) : typed;
  const bytes = Buffer.from(`{"kind":"Pod","apiVersion":"v1","metadata":${JSON.stringify(metadata)},"spec":{"namespace":"acme-${o.namespace}"}}`);
  const expected = JSON.parse(bytes.toString('utf8')) as { metadata: { namespace: string } };
  expected.metadata.namespace = o.namespace;
  return { bytes, expected };
}

const shown = (cut: { src: Buffer; from: number; to: number }) => JSON.parse(Buffer.concat([cut.src.subarray(0, cut.from), cut.src.subarray(cut.to)]).toString('utf8')) as unknown;

describe('a tenant’s stored object edited in place', () => {
  it('loses exactly its namespace’s prefix, in either layout, with or without the known name', () => {
    const at = storedMetadataAt('Pod', 'v1');
    fc.assert(
      fc.property(objectArb, (o) => {
        const { bytes, expected } = stored(o);
        for (const cut of [namespaceCut(bytes, tenant, at, o.name), namespaceCut(bytes, tenant, at), namespaceCut(bytes, tenant)]) {
          expect(cut).toBeDefined();
          expect(shown(cut!)).toEqual(expected);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves an object whose namespace is not the tenant’s alone', () => {
    const bytes = Buffer.from('{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"acme2-web","labels":{"namespace":"acme-web"}}}');
    expect(namespaceCut(bytes, tenant, storedMetadataAt('Pod', 'v1'), 'p')).toBeUndefined();
    expect(namespaceCut(bytes, tenant)).toBeUndefined();
  });
});
