import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { hncDepthsOf, NamespaceTree, TREE_LABEL_SUFFIX, type NamespaceFacts } from '../../../src/hierarchy/namespace-tree.js';

/**
 * The reference: the tree labels by the definition, brute force. A namespace's parent counts when
 * it exists and the namespace has no HNC labels of its own; an edge on a cycle is cut at the
 * cycle's smallest name; a chain that reaches a namespace with HNC labels continues with them.
 */
function reference(facts: ReadonlyMap<string, NamespaceFacts>): Map<string, Record<string, string>> {
  const parent = new Map<string, string>();
  for (const [n, f] of facts) if (!f.hncDepths && f.parent !== undefined && facts.has(f.parent)) parent.set(n, f.parent);
  const onCycle = (n: string) => {
    let at = parent.get(n);
    for (let i = 0; i <= facts.size && at !== undefined; i++) {
      if (at === n) return true;
      at = parent.get(at);
    }
    return false;
  };
  const cycles = new Map<string, string[]>();
  for (const n of facts.keys()) {
    if (!onCycle(n)) continue;
    const members = [n];
    for (let at = parent.get(n)!; at !== n; at = parent.get(at)!) members.push(at);
    cycles.set(members.sort().join(), members);
  }
  for (const members of cycles.values()) parent.delete(members[0]!);
  const out = new Map<string, Record<string, string>>();
  for (const [n, f] of facts) {
    const labels: Record<string, string> = {};
    if (f.hncDepths) {
      for (const [a, d] of f.hncDepths) labels[a + TREE_LABEL_SUFFIX] = String(d);
    } else {
      let depth = 0;
      for (let at: string | undefined = n; at !== undefined; at = parent.get(at)) {
        const own = facts.get(at)?.hncDepths;
        if (own && at !== n) {
          for (const [a, d] of own) labels[a + TREE_LABEL_SUFFIX] = String(depth + d);
          break;
        }
        labels[at + TREE_LABEL_SUFFIX] = String(depth++);
      }
    }
    out.set(n, labels);
  }
  return out;
}

const NAMES = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'team-a', 'team-b'];
/** Random forests with cycles, missing parents and a few namespaces HNC labelled (consistently). */
const forest = fc
  .record({
    present: fc.subarray(NAMES, { minLength: 1 }),
    parents: fc.array(fc.tuple(fc.constantFrom(...NAMES), fc.constantFrom(...NAMES, 'missing')), { maxLength: 14 }),
    labelled: fc.subarray(NAMES, { maxLength: 2 }),
  })
  .map(({ present, parents, labelled }) => {
    const facts = new Map<string, NamespaceFacts>();
    for (const n of present) facts.set(n, {});
    for (const [n, p] of parents) if (facts.has(n) && n !== p) facts.set(n, { parent: p });
    // An HNC-labelled namespace: a root, or under a root of its own labels ("x" and "y" are
    // ancestors only HNC's labels name).
    labelled.forEach((n, i) => {
      if (facts.has(n)) facts.set(n, { hncDepths: new Map(i === 0 ? [[n, 0]] : [[n, 0], ['x', 1], ['y', 2]]) });
    });
    return facts;
  });

describe('the namespace tree', () => {
  it('has the reference’s labels for any forest, cycles cut, never loops', () => {
    fc.assert(
      fc.property(forest, (facts) => {
        const tree = new NamespaceTree(facts);
        const want = reference(facts);
        for (const n of facts.keys()) {
          expect(tree.depthLabels(n), n).toEqual(want.get(n));
          expect(tree.ancestors(n)[0]).toBe(n);
          expect(tree.ancestors(n).length).toBeLessThanOrEqual(facts.size + 2);
        }
        // Every namespace in a subtree has its root in its chain, and nothing else has.
        for (const a of facts.keys()) {
          const under = new Set(tree.subtree(a));
          for (const n of facts.keys()) expect(under.has(n), `${n} under ${a}`).toBe(tree.ancestors(n).includes(a));
        }
      }),
      { numRuns: 1000 },
    );
    // Half a second alone; a busy machine (CI's e2e beside it) can take many times that.
  }, 30_000);

  it('names what it cut: a missing parent, the smallest name of a cycle', () => {
    const tree = new NamespaceTree(new Map<string, NamespaceFacts>([['b', { parent: 'c' }], ['c', { parent: 'b' }], ['d', { parent: 'gone' }], ['e', { parent: 'b' }]]));
    expect(tree.problems).toEqual([
      { namespace: 'b', parent: 'c', problem: 'cycle' },
      { namespace: 'd', parent: 'gone', problem: 'missing parent' },
    ]);
    expect(tree.depthLabels('e')).toEqual({ [`e${TREE_LABEL_SUFFIX}`]: '0', [`b${TREE_LABEL_SUFFIX}`]: '1' });
    expect(tree.depthLabels('c')).toEqual({ [`c${TREE_LABEL_SUFFIX}`]: '0', [`b${TREE_LABEL_SUFFIX}`]: '1' });
    expect(tree.depthLabels('unknown')).toEqual({ [`unknown${TREE_LABEL_SUFFIX}`]: '0' });
    // In a tree: a parent or children; d (its parent cut) stands alone.
    expect(['b', 'c', 'd', 'e', 'unknown'].map((n) => tree.inTree(n))).toEqual([true, true, false, true, false]);
  });

  it('reads HNC’s own labels', () => {
    expect(hncDepthsOf({ [`team-a${TREE_LABEL_SUFFIX}`]: '1', [`a-1${TREE_LABEL_SUFFIX}`]: '0', app: 'x', [`bad${TREE_LABEL_SUFFIX}`]: 'one' })).toEqual(new Map([['team-a', 1], ['a-1', 0]]));
    expect(hncDepthsOf({ app: 'x' })).toBeUndefined();
  });
});
