import { request } from 'node:https';
import { readFileSync } from 'node:fs';
import type { MemberEndpoint } from '../fleet/http.js';

/** A raw streaming watch, to see exactly the lines a client gets. */
export interface WatchEvent {
  type: string;
  object: { kind?: string; metadata?: { name?: string; namespace?: string; resourceVersion?: string; annotations?: Record<string, string> }; [k: string]: unknown };
}

export interface OpenWatch {
  status: number;
  events: WatchEvent[];
  ended: Promise<void>;
  /** Resolves once `pred` holds over the events received so far (checked on every event). */
  until(pred: (events: WatchEvent[]) => boolean, timeoutMs?: number): Promise<WatchEvent[]>;
  close(): void;
}

export function openWatch(ep: MemberEndpoint, path: string, accept = 'application/json'): Promise<OpenWatch> {
  return new Promise((resolve, reject) => {
    const events: WatchEvent[] = [];
    const waiters = new Set<() => void>();
    const req = request(new URL(path, ep.server), { ca: readFileSync(ep.caFile), headers: { authorization: `Bearer ${ep.token}`, accept } }, (res) => {
      let partial = '';
      let endResolve!: () => void;
      const ended = new Promise<void>((r) => (endResolve = r));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const l of lines) if (l.trim()) events.push(JSON.parse(l) as WatchEvent);
        for (const w of waiters) w();
      });
      res.on('end', () => {
        endResolve();
        for (const w of waiters) w();
      });
      res.on('error', () => endResolve());
      resolve({
        status: res.statusCode ?? 0,
        events,
        ended,
        until(pred, timeoutMs = 10_000) {
          return new Promise((ok, fail) => {
            const check = () => {
              if (pred(events)) {
                waiters.delete(check);
                clearTimeout(timer);
                ok(events);
              }
            };
            const timer = setTimeout(() => {
              waiters.delete(check);
              fail(new Error(`watch ${path}: condition not met in ${timeoutMs} ms; got ${events.map((e) => `${e.type}:${e.object.metadata?.name}`).join(' ')}`));
            }, timeoutMs);
            waiters.add(check);
            check();
          });
        },
        close() {
          req.destroy();
        },
      });
    });
    req.on('error', reject);
    req.end();
  });
}
