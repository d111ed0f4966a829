/** What flotilla knows about one cached resource, learned from a member's discovery. */
export interface ResourceInfo {
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  singularName: string;
  shortNames: string[];
  categories: string[];
  /** The member's verbs; flotilla advertises the subset it serves. */
  memberVerbs: string[];
  /** How the member writes a bookmark of this kind (src/resources/bookmark-template.ts). */
  bookmark?: BookmarkTemplate;
  /**
   * Whether the member's JSON lists give each item its kind and apiVersion: custom resources'
   * do, kinds compiled into the apiserver's do not (src/resources/list-item-kinds.ts). Cached
   * lists show items as the member does; undefined (not learned): with them, as stored.
   */
  listItemKinds?: boolean;
}

/**
 * A member's bookmark is an empty object of the watched kind with only a resourceVersion, as its
 * Go type serializes it (a Pod's has `"spec":{"containers":null},"status":{}`), and in a Table
 * watch a row of the printer's cells for that empty object. Flotilla's bookmarks copy both.
 */
export interface BookmarkTemplate {
  /** The object's members after kind, apiVersion and metadata, as JSON text: `,"spec":{…}` or ''. */
  fields: string;
  /** The Table row's cells. */
  cells: unknown[];
}

export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

/** The namespaces' key (gvrKey): the resource every tenant and hierarchy decision reads. */
export const NAMESPACES_KEY = 'v1/namespaces';

/** `v1/pods`, `apps/v1/deployments`: the resource's path fragment, also its key in the store. */
export function gvrKey(r: GroupVersionResource): string {
  return r.group ? `${r.group}/${r.version}/${r.resource}` : `${r.version}/${r.resource}`;
}

/**
 * Whether `name` names this resource as a caller writes it: its resource or its Kind, case aside,
 * with `.<group>` to choose the group (`pods`, `Deployment`, `deployments.apps`).
 */
export function namesResource(name: string, info: { group: string; resource: string; kind: string }): boolean {
  const dot = name.indexOf('.');
  const bare = (dot < 0 ? name : name.slice(0, dot)).toLowerCase();
  if (info.resource.toLowerCase() !== bare && info.kind.toLowerCase() !== bare) return false;
  return dot < 0 || info.group.toLowerCase() === name.slice(dot + 1).toLowerCase();
}

export function groupVersion(r: { group: string; version: string }): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}

/** The URL prefix of the resource's collection on a member or on flotilla. */
export function apiPrefix(r: { group: string; version: string }): string {
  return r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
}

export function collectionPath(r: GroupVersionResource & { namespaced?: boolean }, namespace?: string): string {
  const ns = namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${apiPrefix(r)}${ns}/${r.resource}`;
}

