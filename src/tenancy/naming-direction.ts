import type { ResourcePolicy, Tenant } from './tenant.js';
import { isJsonObject } from '../util/json-object.js';

/**
 * One direction of renaming between a tenant's names and a member's (tenant → member, or member →
 * tenant), and the field renames every object-naming module builds on: a rename the tenant cannot
 * have throws NOT_THE_TENANTS, which hides the object it is in.
 */

/** How references resolve a kind they name: its resource and scope, or undefined if unknown. */
export type KindLookup = (group: string, kind: string) => { resource: string; namespaced: boolean } | undefined;

export interface ObjectNaming {
  tenant: Tenant;
  /** Takes the member's group. */
  kinds: KindLookup;
  /** Whether the member serves this API group (for memberGroup). */
  memberGroups: (group: string) => boolean;
}

export type Json = Record<string, unknown>;

/** The objects of an array field (or none): a reference list's entries. */
export function objectsOf(v: unknown): Json[] {
  return Array.isArray(v) ? v.filter(isJsonObject) : [];
}

/** The object at a path of object fields, or undefined. */
export function at(obj: Json, ...path: string[]): Json | undefined {
  let v: unknown = obj;
  for (const key of path) v = isJsonObject(v) ? v[key] : undefined;
  return isJsonObject(v) ? v : undefined;
}

/**
 * Thrown member → tenant when an object names something the tenant cannot name; objectToTenant
 * and the List walk catch it and hide the object. One shared value: hiding is not an error.
 */
class NotTheTenants {}
export const NOT_THE_TENANTS = new NotTheTenants();

export function seen<T>(v: T | undefined): T {
  if (v === undefined) throw NOT_THE_TENANTS;
  return v;
}

/** Renames a string field; '' means "not set" in Kubernetes, and stays so on both sides. */
export function rename(obj: Json, key: string, to: (s: string) => string | undefined): void {
  const v = obj[key];
  if (typeof v === 'string' && v !== '') obj[key] = seen(to(v));
}

/** Renames every string of an array field. */
export function renameEach(obj: Json, key: string, to: (s: string) => string | undefined): void {
  const v = obj[key];
  if (Array.isArray(v)) obj[key] = v.map((s: unknown) => (typeof s === 'string' && s !== '' ? seen(to(s)) : s));
}

/**
 * One direction of renaming. Tenant → member every answer is defined; member → tenant, undefined
 * is a name the tenant cannot write (the object is hidden, or the tree label dropped).
 */
export interface Direction {
  readonly tenantward: boolean;
  readonly n: ObjectNaming;
  readonly tenant: Tenant;
  /** The member's group of a group as the input writes it. */
  memberGroup(group: string): string;
  /** The output's group of a member group. */
  group(memberGroup: string): string | undefined;
  namespace(ns: string): string | undefined;
  /** A cluster-scoped object's name by its resource's policy (not `hidden`), resource in the member's group. */
  clusterName(memberGroup: string, resource: string, name: string, policy: ResourcePolicy): string | undefined;
  /** A CRD's `spec.group` when the tenant owns its CRDs: the group it creates. */
  crdGroup(group: string): string | undefined;
  user(user: string): string | undefined;
  userGroup(group: string): string | undefined;
  /** A Status message; member → tenant only (Status is an answer). */
  text(text: string): string;
  /**
   * The same direction for what an object refers to (subjects, roleRefs, owners, selectors):
   * member → tenant, a name the tenant cannot write stays as the member has it, and the object is
   * shown all the same. Only an object's own names decide whether the tenant sees it.
   */
  readonly references: Direction;
  /** The same direction, strict, where a lenient one is given (a namespace's tree labels). */
  readonly strict: Direction;
}

/**
 * `d` with its renames falling back to the name itself (member → tenant) for references, unless
 * the name is another tenant's: that still hides the object.
 */
function lenient(d: Omit<Direction, 'references' | 'strict'>): Omit<Direction, 'references' | 'strict'> {
  const orSame = <A extends unknown[]>(f: (s: string, ...rest: A) => string | undefined) => (s: string, ...rest: A) => f(s, ...rest) ?? (d.tenant.namesAnother(s) ? undefined : s);
  return {
    ...d,
    group: orSame(d.group),
    namespace: orSame(d.namespace),
    clusterName: (g, r, name, policy) => d.clusterName(g, r, name, policy) ?? (d.tenant.namesAnother(name) ? undefined : name),
    crdGroup: orSame(d.crdGroup),
    user: orSame(d.user),
    userGroup: orSame(d.userGroup),
  };
}

/** A direction with its reference and strict forms, each knowing the other. */
function direction(renames: Omit<Direction, 'references' | 'strict'>): Direction {
  const strict: { -readonly [K in keyof Direction]: Direction[K] } = { ...renames, references: undefined!, strict: undefined! };
  const references: typeof strict = { ...lenient(renames), references: undefined!, strict };
  strict.strict = strict;
  strict.references = references;
  references.references = references;
  return strict;
}

export function memberward(n: ObjectNaming): Direction {
  const t = n.tenant;
  return direction({
    tenantward: false,
    n,
    tenant: t,
    memberGroup: (g) => t.memberGroup(g, n.memberGroups),
    group: (g) => g,
    namespace: (ns) => t.memberNamespace(ns),
    // A hidden resource's name stays: callers refuse writes of hidden objects before this.
    clusterName: (g, r, name, policy) => t.memberName(g, r, name, policy) ?? name,
    crdGroup: (g) => t.ownGroup(g),
    user: (u) => t.memberUser(u),
    userGroup: (g) => t.memberUserGroup(g),
    text: (s) => s,
  });
}

export function tenantward(n: ObjectNaming): Direction {
  const t = n.tenant;
  return direction({
    tenantward: true,
    n,
    tenant: t,
    memberGroup: (g) => g,
    group: (g) => t.tenantGroup(g),
    namespace: (ns) => t.tenantNamespace(ns),
    clusterName: (g, r, name, policy) => t.tenantName(g, r, name, policy),
    // Only the tenant's own group: tenantGroup also passes groups that are nobody's.
    crdGroup: (g) => {
      const own = t.tenantGroup(g);
      return own !== undefined && own !== g ? own : undefined;
    },
    user: (u) => t.tenantUser(u),
    userGroup: (g) => t.tenantUserGroup(g),
    text: (s) => t.tenantText(s),
  });
}
