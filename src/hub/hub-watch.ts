import { setTimeout as sleep } from 'node:timers/promises';
import { Backoff } from '../cacher/backoff.js';
import type { MemberClient } from '../members/member-client.js';
import { BACKOFF_BASE_MS, HUB_WATCH_BACKOFF_CAP_MS, HUB_WATCH_IDLE_GRACE_SECONDS } from '../registry/defaults.js';
import { WatchLines, splitWatchLines } from '../api/json-watch.js';

/** An object read from the hub, as JSON. */
export interface HubObject {
  metadata: { name: string; namespace?: string; resourceVersion?: string; generation?: number };
  [field: string]: unknown;
}

interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: HubObject & { code?: number; message?: string };
}

class Gone extends Error {}

/**
 * One collection on the hub kept in memory by list and watch: the Fleet (a field selector on its
 * name) or a namespace's Secrets. A watch that ends is resumed from the last resourceVersion; one
 * the hub calls expired (410) is replaced by a fresh list; failures are retried with backoff and
 * reported. `onChange` is called after the first list and after every change.
 */
export class HubWatch {
  readonly objects = new Map<string, HubObject>();
  /** Set once a list has succeeded; `error` holds why the last attempt failed, until one succeeds. */
  listed = false;
  error?: string;
  private rv?: string;
  private readonly abort = new AbortController();
  private readonly backoff = new Backoff(BACKOFF_BASE_MS, HUB_WATCH_BACKOFF_CAP_MS);
  private readonly firstAttempt: Promise<void>;
  private settleFirst!: () => void;

  constructor(
    private readonly client: MemberClient,
    /** A collection path: `/apis/flotilla.io/v1alpha1/fleets`, `/api/v1/namespaces/x/secrets`. */
    private readonly path: string,
    /** Query parameters of both the list and the watch (a field selector). */
    private readonly query: Record<string, string>,
    private readonly onChange: () => void,
    /** Told of a failure when it differs from the last one (a hub out for minutes is one line). */
    private readonly onError: (message: string) => void = () => undefined,
    private readonly timeoutSeconds = 300,
  ) {
    this.firstAttempt = new Promise((resolve) => (this.settleFirst = resolve));
    void this.run();
  }

  /** Resolves after the first list, successful or not (`listed`, `error` say which). */
  whenAttempted(): Promise<void> {
    return this.firstAttempt;
  }

  close(): void {
    this.abort.abort();
    this.settleFirst();
  }

  private url(extra: Record<string, string>): string {
    return `${this.path}?${new URLSearchParams({ ...this.query, ...extra }).toString()}`;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      try {
        if (this.rv === undefined) await this.list();
        await this.watch();
        this.backoff.reset();
      } catch (e) {
        if (signal.aborted) return;
        if (e instanceof Gone) {
          this.rv = undefined;
          continue;
        }
        const message = (e as Error).message;
        if (message !== this.error) this.onError(message);
        this.error = message;
        this.settleFirst();
        this.onChange();
        await sleep(this.backoff.next(), undefined, { signal }).catch(() => undefined);
      }
    }
  }

  private async list(): Promise<void> {
    const list = await this.client.getJson<{ metadata: { resourceVersion: string }; items: HubObject[] }>(this.url({}), this.abort.signal);
    this.objects.clear();
    for (const item of list.items) this.objects.set(item.metadata.name, item);
    this.rv = list.metadata.resourceVersion;
    this.listed = true;
    this.error = undefined;
    this.settleFirst();
    this.onChange();
  }

  private async watch(): Promise<void> {
    const path = this.url({ watch: '1', allowWatchBookmarks: 'true', resourceVersion: this.rv!, timeoutSeconds: String(this.timeoutSeconds) });
    const res = await this.client.send({ path, headers: { accept: 'application/json' }, signal: this.abort.signal, idleTimeoutMs: (this.timeoutSeconds + HUB_WATCH_IDLE_GRACE_SECONDS) * 1000 });
    if (res.statusCode !== 200) {
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      if (res.statusCode === 410) throw new Gone();
      throw new Error(`watch ${this.path}: HTTP ${res.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`);
    }
    const lines = new WatchLines();
    for await (const chunk of res) {
      for (const line of splitWatchLines(lines.push(chunk as Buffer))) this.event(JSON.parse(line.toString('utf8')) as WatchEvent);
    }
  }

  private event(e: WatchEvent): void {
    if (e.type === 'ERROR') {
      if (e.object.code === 410) throw new Gone();
      throw new Error(`watch ${this.path}: ${e.object.message ?? JSON.stringify(e.object)}`);
    }
    this.rv = e.object.metadata.resourceVersion ?? this.rv;
    if (e.type === 'BOOKMARK') return;
    if (e.type === 'DELETED') this.objects.delete(e.object.metadata.name);
    else this.objects.set(e.object.metadata.name, e.object);
    this.error = undefined;
    this.onChange();
  }
}
