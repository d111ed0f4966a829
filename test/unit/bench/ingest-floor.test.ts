import { describe, expect, it } from 'vitest';
import { walkTablePage } from '../../../bench/lib/ingest-floor.js';

/** A Table page as a member writes it for the cachers' lists: rows with their cells and whole objects. */
function tablePage(objects: object[], token?: string): Buffer {
  return Buffer.from(JSON.stringify({
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: '42', ...(token ? { continue: token } : {}) },
    columnDefinitions: [{ name: 'Name', type: 'string' }],
    rows: objects.map((o) => ({ cells: [(o as { metadata: { name: string } }).metadata.name], object: o })),
  }));
}

describe('the ingest floor (bench ingest)', () => {
  it("stores each row's object as the member sent it, under its namespace and name, and follows the continue token", () => {
    const pods = [
      { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'a', namespace: 'ns-1', labels: { app: '{"x"}' } }, spec: { containers: [{ name: 'c' }] } },
      { kind: 'Pod', apiVersion: 'v1', metadata: { namespace: 'ns-2', name: 'b\\"q' }, status: { phase: 'Running' } },
    ];
    const page = tablePage(pods, 'next-page');
    const seen: { bytes: string; namespace: string; name: string }[] = [];
    const token = walkTablePage(page, (start, end, namespace, name) => seen.push({ bytes: page.toString('utf8', start, end), namespace, name }));
    expect(token).toBe('next-page');
    expect(seen).toEqual(pods.map((p) => ({ bytes: JSON.stringify(p), namespace: p.metadata.namespace, name: p.metadata.name })));
    expect(walkTablePage(tablePage([]), () => undefined)).toBeUndefined();
  });

  it('refuses a page it cannot follow rather than storing part of it', () => {
    const page = tablePage([{ metadata: { name: 'a' } }]);
    expect(() => walkTablePage(page.subarray(0, page.length - 5), () => undefined)).toThrow(/could not follow/);
  });
});
