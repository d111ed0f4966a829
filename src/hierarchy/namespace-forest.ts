import { NAMESPACES_KEY } from '../api/resource-info.js';
import type { Store, StoreEvent } from '../store/store.js';
import { hncDepthsOf, NamespaceTree, SUBNAMESPACE_OF, type NamespaceFacts, type TreeProblem } from './namespace-tree.js';
import { NAMESPACE_TREE_HISTORY, NAMESPACE_TREE_SETTLE_MS } from '../registry/defaults.js';

/**
 * Every member's namespace tree, from the namespaces (and, where cached, the
 * HierarchyConfigurations) flotilla holds. What each namespace says of its parent is kept per
 * member and updated by each change (one small object parsed); the tree is built from those facts
 * on first need after a change. The tree needs every namespace of a member, so it exists only
 * where namespaces are cached from it; elsewhere each namespace is a root.
 *
 * A change that moves namespaces that may already hold objects keeps the tree it replaces, with
 * the RV it was replaced at (a few per member): a watch resumed from before the move is replayed
 * with the tree of its time and then told what entered and left its selection since.
 */
export const NAMESPACES = NAMESPACES_KEY;
export const HIERARCHY_CONFIGURATIONS = 'hnc.x-k8s.io/v1alpha2/hierarchyconfigurations';


interface NamespaceDoc {
  metadata?: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
}
interface HierarchyDoc {
  spec?: { parent?: string };
}

/** What one namespace says of its place: its annotation's parent and HNC's labels. */
interface OwnFacts {
  annotated?: string;
  hncDepths?: ReadonlyMap<string, number>;
}

interface Member {
  namespaces: Map<string, OwnFacts>;
  /** HierarchyConfiguration parents, by namespace. */
  configured: Map<string, string>;
  /** How many namespaces name each parent (by annotation or configuration), present or not. */
  parentNames: Map<string, number>;
  tree?: NamespaceTree;
  /** Trees replaced by moves, oldest first, each with the RV it stopped holding at. */
  past: { tree: NamespaceTree; until: bigint }[];
  /** Whether older trees were dropped: before the first kept one, the tree is unknown. */
  forgot: boolean;
}

/**
 * Hears that members' trees may have changed, with per member the namespaces that were there
 * before and whose tree labels changed (their own events do not say so: a namespace moves when
 * its parent does).
 */
export type ForestListener = (relabelled: ReadonlyMap<string, readonly string[]>) => void;

export class NamespaceForest {
  private readonly members = new Map<string, Member>();
  private readonly listeners = new Set<ForestListener>();
  private readonly unsubscribe: (() => void)[];
  /**
   * Per member, the namespaces relabelled by the changes gathered for the listeners. Found batch
   * by batch, not by comparing the trees at the ends of the gathering: a move and its reversal
   * cancel out there, yet a watch opened between them saw only the second.
   */
  private relabelled = new Map<string, Set<string>>();
  private settle?: NodeJS.Timeout;

  constructor(store: Store) {
    for (const e of store.entries(HIERARCHY_CONFIGURATIONS)) {
      const parent = e.name === 'hierarchy' ? configuredParent(e.bytes) : undefined;
      if (parent !== undefined) setConfigured(this.member(e.cluster), e.namespace, parent);
    }
    for (const e of store.entries(NAMESPACES)) setOwnFacts(this.member(e.cluster), e.name, ownFacts(e.bytes));
    this.unsubscribe = [
      store.subscribe(NAMESPACES, (events) => this.apply(events, (m, e) => {
        const was = m.namespaces.get(e.name);
        const now = e.type === 'DELETED' ? undefined : ownFacts(e.bytes);
        return { mayMove: namespaceMayMove(m, e.name, was, now), movesHolders: movesHolders(m, e, was, now), change: () => setOwnFacts(m, e.name, now) };
      })),
      store.subscribe(HIERARCHY_CONFIGURATIONS, (events) => this.apply(events, (m, e) => {
        const parent = e.type !== 'DELETED' && e.name === 'hierarchy' ? configuredParent(e.bytes) : undefined;
        return { mayMove: m.configured.get(e.namespace) !== parent, movesHolders: true, change: () => setConfigured(m, e.namespace, parent) };
      })),
    ];
  }

  /** The member's tree as cached now. */
  tree(cluster: string): NamespaceTree {
    const m = this.member(cluster);
    if (!m.tree) {
      const facts = new Map<string, NamespaceFacts>();
      for (const [name, own] of m.namespaces) {
        const parent = m.configured.get(name) ?? own.annotated;
        facts.set(name, { ...(parent !== undefined ? { parent } : {}), ...(own.hncDepths ? { hncDepths: own.hncDepths } : {}) });
      }
      m.tree = new NamespaceTree(facts);
    }
    return m.tree;
  }

  /**
   * The member's tree as it was at its RV `rv` (the current one when nothing moved since);
   * undefined when that tree is no longer kept.
   */
  treeAt(cluster: string, rv: string): NamespaceTree | undefined {
    const m = this.member(cluster);
    if (!/^[0-9]+$/.test(rv)) return this.tree(cluster);
    const at = BigInt(rv);
    const i = m.past.findIndex((p) => at < p.until);
    if (i < 0) return this.tree(cluster);
    return i === 0 && m.forgot ? undefined : m.past[i]!.tree;
  }

  /** Cycles and missing parents, per member, for /status and Warnings. */
  problems(clusters: Iterable<string>): (TreeProblem & { cluster: string })[] {
    const out: (TreeProblem & { cluster: string })[] = [];
    for (const c of clusters) for (const p of this.tree(c).problems) out.push({ cluster: c, ...p });
    return out;
  }

  /** Hears that trees may have changed (for watches that follow the tree). */
  onChange(listener: ForestListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    for (const u of this.unsubscribe) u();
    this.listeners.clear();
    clearTimeout(this.settle);
  }

  private member(cluster: string): Member {
    let m = this.members.get(cluster);
    if (!m) this.members.set(cluster, (m = { namespaces: new Map(), configured: new Map(), parentNames: new Map(), past: [], forgot: false }));
    return m;
  }

  /**
   * Applies one committed batch (one member's). `plan` says, before the change is made, whether
   * it can move a namespace, and one that may already hold objects (then the tree it replaces is
   * kept); a batch with such a change is followed by finding what it relabelled.
   */
  private apply(events: readonly StoreEvent[], plan: (m: Member, e: StoreEvent) => { mayMove: boolean; movesHolders: boolean; change: () => void }): void {
    const before = new Map<string, NamespaceTree>();
    for (const e of events) {
      const m = this.member(e.cluster);
      const { mayMove, movesHolders, change } = plan(m, e);
      if (mayMove && !before.has(e.cluster)) before.set(e.cluster, this.tree(e.cluster));
      if (movesHolders && /^[0-9]+$/.test(e.rv)) {
        m.past.push({ tree: this.tree(e.cluster), until: BigInt(e.rv) });
        if (m.past.length > NAMESPACE_TREE_HISTORY) {
          m.past.shift();
          m.forgot = true;
        }
      }
      change();
      m.tree = undefined;
    }
    if (before.size === 0) return;
    for (const [cluster, old] of before) {
      const now = this.tree(cluster);
      // Its chain changed, or it joined or left a tree (shown with labels, or alone without).
      const moved = [...old.namespaces()].filter((ns) => now.has(ns) && (!sameChain(old.ancestors(ns), now.ancestors(ns)) || old.inTree(ns) !== now.inTree(ns)));
      if (moved.length === 0) continue;
      let names = this.relabelled.get(cluster);
      if (!names) this.relabelled.set(cluster, (names = new Set()));
      for (const ns of moved) names.add(ns);
    }
    this.settle ??= setTimeout(() => {
      this.settle = undefined;
      const relabelled = new Map([...this.relabelled].map(([cluster, names]) => [cluster, [...names]]));
      this.relabelled = new Map();
      for (const l of this.listeners) l(relabelled);
    }, NAMESPACE_TREE_SETTLE_MS);
  }
}

function ownFacts(bytes: Buffer): OwnFacts {
  const md = (JSON.parse(bytes.toString('utf8')) as NamespaceDoc).metadata ?? {};
  const annotated = md.annotations?.[SUBNAMESPACE_OF];
  const hncDepths = hncDepthsOf(md.labels);
  return { ...(typeof annotated === 'string' && annotated !== '' ? { annotated } : {}), ...(hncDepths ? { hncDepths } : {}) };
}

function configuredParent(bytes: Buffer): string | undefined {
  const parent = (JSON.parse(bytes.toString('utf8')) as HierarchyDoc).spec?.parent;
  return typeof parent === 'string' && parent !== '' ? parent : undefined;
}

function sameFacts(a: OwnFacts, b: OwnFacts): boolean {
  if (a.annotated !== b.annotated) return false;
  const x = [...(a.hncDepths ?? [])].sort().join();
  const y = [...(b.hncDepths ?? [])].sort().join();
  return x === y;
}

/**
 * Whether a namespace's change can change any namespace's place: what it says of its parent
 * changed, or it came or went while it had a parent, HNC's labels, a configured parent, or a child
 * naming it (a namespace alone comes and goes without moving another).
 */
function namespaceMayMove(m: Member, name: string, was: OwnFacts | undefined, now: OwnFacts | undefined): boolean {
  if (was && now) return !sameFacts(was, now);
  const facts = was ?? now;
  if (!facts) return false;
  return facts.annotated !== undefined || facts.hncDepths !== undefined || m.configured.has(name) || m.parentNames.has(name);
}

function countParent(m: Member, parent: string | undefined, by: 1 | -1): void {
  if (parent === undefined) return;
  const n = (m.parentNames.get(parent) ?? 0) + by;
  if (n > 0) m.parentNames.set(parent, n);
  else m.parentNames.delete(parent);
}

function setOwnFacts(m: Member, name: string, facts: OwnFacts | undefined): void {
  countParent(m, m.namespaces.get(name)?.annotated, -1);
  countParent(m, facts?.annotated, 1);
  if (facts) m.namespaces.set(name, facts);
  else m.namespaces.delete(name);
}

function setConfigured(m: Member, namespace: string, parent: string | undefined): void {
  countParent(m, m.configured.get(namespace), -1);
  countParent(m, parent, 1);
  if (parent !== undefined) m.configured.set(namespace, parent);
  else m.configured.delete(namespace);
}

/**
 * Whether a namespace change can move namespaces that may already hold objects: a new namespace
 * only when a child named it (missing until now, the child was a root; the new one's own objects
 * come after it, and the event log has them), a deleted one can (its children lose their parent),
 * a modified one when what it says of its parent changed.
 */
function movesHolders(m: Member, e: StoreEvent, was: OwnFacts | undefined, now: OwnFacts | undefined): boolean {
  if (e.type === 'ADDED') return m.parentNames.has(e.name);
  return !was || !now || !sameFacts(was, now);
}

function sameChain(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((n, i) => n === b[i]);
}
