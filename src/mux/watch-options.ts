import type { CachedResource } from '../cacher/cache-roles.js';
import type { ResponseForm } from '../api/negotiate.js';
import type { ReadView } from '../view/read-view.js';
import type { IncludeObject } from './response-forms.js';

/** What a client's watch asks for and may see: the request, read once by the router. */
export interface WatchOptions {
  resource: CachedResource;
  /** What this watch may see (src/view); its resourceVersions name only the view's clusters. */
  view: ReadView;
  form: ResponseForm;
  /** Objects in protobuf (a client preferring it, a built-in kind): each line a protobuf frame. */
  protobuf?: boolean;
  includeObject?: IncludeObject;
  /**
   * The client's decoded global RV, of the view's clusters only; undefined for "" or "0" (start
   * from the current state).
   */
  since?: Record<string, string>;
  /** Watch-list: current state as ADDED, then a bookmark marking the end of the initial events. */
  sendInitialEvents: boolean;
  bookmarks: boolean;
  timeoutMs: number;
  bookmarkIntervalMs: number;
  /** A watcher whose unsent bytes pass this is closed; the client re-watches from its last RV. */
  maxBufferedBytes: number;
  /** A catch-up the client takes nothing of for this long is ended: it holds a read snapshot. */
  catchUpStallMs: number;
  /**
   * The view decided again (a member's RBAC changed): what it shows now and did not, or showed
   * and does not, goes to the client as ADDED or DELETED. Without it the view is fixed.
   */
  revise?: (current: ReadView) => ReadView;
  /** Decide the view again once caught up (a resumed watch replayed with the view of its time). */
  reviseOnceLive?: boolean;
}
