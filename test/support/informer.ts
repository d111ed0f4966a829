import { execFileSync, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { expect } from 'vitest';
import { decodeGlobalRV } from '../../src/api/global-rv.js';

/** The test clients' directory (test/clients/go, built and cached by build-fleet-binaries.mjs). */
export function clientsDir(): string {
  const script = resolve(import.meta.dirname, '..', '..', 'scripts', 'build-fleet-binaries.mjs');
  return execFileSync('node', [script, '--clients'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

export type InformerMode = 'informer' | 'metadata' | 'dynamic' | 'patcher';

export interface InformerRun {
  synced: Promise<void>;
  /** Everything it printed so far. */
  output(): string;
  /**
   * SIGTERM, then the informer's cache of the namespace (every namespace when none was given),
   * as `<namespace>/<name> <uid> <cluster>:<member RV>` lines, its resync count, the pod LISTs
   * and WATCHes it sent, and what it logged (client-go logs a decode error or a watch-list
   * fallback there, and carries on).
   */
  dump(): Promise<{ lines: string[]; resyncs: number; lists: number; watches: number; /** Answers to its pods lists and watches in protobuf. */ protobufAnswers: number; log: string }>;
  /** Stops it by its PID if it still runs (a test that failed before dump()). */
  stop(): void;
}

/** The client-go program of test/clients/go, as a running informer of pods. */
/**
 * `watchList`: client-go's WatchListClient gate set on or off, or `'default'` left as the client
 * ships it (on since client-go 0.35, the test client's version).
 */
export function startInformer(opts: { bin: string; kubeconfig: string; mode: InformerMode; watchList: boolean | 'default'; selector?: string; namespace?: string; accept?: string }): InformerRun {
  const child = spawn(opts.bin, ['-kubeconfig', opts.kubeconfig, '-mode', opts.mode, '-resync', '1s', '-selector', opts.selector ?? '', ...(opts.accept ? ['-accept', opts.accept] : [])], {
    env: opts.watchList === 'default'
      ? Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'KUBE_FEATURE_WatchListClient'))
      : { ...process.env, KUBE_FEATURE_WatchListClient: String(opts.watchList) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  const synced = new Promise<void>((resolveSynced, reject) => {
    const check = setInterval(() => {
      if (out.includes('SYNCED')) {
        clearInterval(check);
        resolveSynced();
      }
    }, 20);
    void exited.then((code) => {
      clearInterval(check);
      reject(new Error(`informer exited (${code}) before syncing: ${err.slice(-2000)}`));
    });
  });
  synced.catch(() => undefined);
  const cached = (l: string) => (opts.namespace !== undefined ? l.startsWith(`${opts.namespace}/`) : /^[a-z0-9-]+\/\S+ \S+ \S+ \S+$/.test(l));
  return {
    synced,
    output: () => out,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
    async dump() {
      child.kill('SIGTERM');
      const code = await exited;
      expect(code, err.slice(-2000)).toBe(0);
      const lines = out.split('\n').filter(cached).map((l) => {
        // An object delivered by a watch event carries the fleet-wide mark; its own cluster's
        // entry is the object's member RV.
        const [name, uid, rv, cluster] = l.split(' ');
        return `${name} ${uid} ${cluster}:${decodeGlobalRV(rv!)[cluster!]}`;
      });
      const resyncs = Number(/RESYNCS (\d+)/.exec(out)?.[1] ?? -1);
      const requests = /REQUESTS lists=(\d+) watches=(\d+) protobuf=(\d+)/.exec(out);
      return { lines: lines.sort(), resyncs, lists: Number(requests?.[1] ?? -1), watches: Number(requests?.[2] ?? -1), protobufAnswers: Number(requests?.[3] ?? -1), log: err };
    },
  };
}
