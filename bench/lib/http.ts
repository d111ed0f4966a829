import { Agent, request } from 'node:https';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { endpointUrl, type MemberEndpoint } from '../../test/fleet/http.js';

/**
 * A timed GET that reads the whole body but keeps none of it: bytes are counted (and optionally
 * scanned by `onChunk`) as they arrive, so a 2 GB list costs the bench no memory and no parsing.
 * One keep-alive agent per endpoint, so the measured requests reuse warmed-up connections.
 */
export interface TimedResponse {
  status: number;
  bytes: number;
  ms: number;
  /** The first 500 bytes, kept only for non-200 answers (the error). */
  errorText?: string;
  /** The first `keepHead` bytes of a 200 answer, when asked for. */
  head?: string;
}

export interface RequestOpts {
  accept?: string;
  timeoutMs?: number;
  onChunk?: (chunk: Buffer) => void;
  keepHead?: number;
}

export class BenchClient {
  private readonly agent: Agent;

  constructor(private readonly ep: MemberEndpoint) {
    this.agent = new Agent({ keepAlive: true, ca: readFileSync(ep.caFile), maxSockets: 256 });
  }

  get(path: string, opts: RequestOpts = {}): Promise<TimedResponse> {
    return this.send('GET', path, opts);
  }

  /** A timed request of any method; 2xx other than 200 (a create's 201) counts as success too. */
  send(method: string, path: string, opts: RequestOpts & { body?: string; contentType?: string } = {}): Promise<TimedResponse> {
    const url = endpointUrl(this.ep.server, path);
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          method,
          agent: this.agent,
          headers: {
            authorization: `Bearer ${this.ep.token}`,
            accept: opts.accept ?? 'application/json',
            ...(opts.body !== undefined ? { 'content-type': opts.contentType ?? 'application/json' } : {}),
          },
          timeout: opts.timeoutMs ?? 120_000,
        },
        (res) => {
          let bytes = 0;
          // Callers check for 200; any 2xx is a success here.
          const status = res.statusCode && res.statusCode >= 200 && res.statusCode < 300 ? 200 : (res.statusCode ?? 0);
          const headChunks: Buffer[] = [];
          const keep = status !== 200 ? 500 : (opts.keepHead ?? 0);
          res.on('data', (c: Buffer) => {
            if (bytes < keep) headChunks.push(c);
            bytes += c.length;
            if (status === 200) opts.onChunk?.(c);
          });
          res.on('end', () => {
            const ms = performance.now() - started;
            const head = keep ? Buffer.concat(headChunks).subarray(0, keep).toString('utf8') : undefined;
            resolve({ status, bytes, ms, ...(status !== 200 ? { errorText: head } : head !== undefined ? { head } : {}) });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${url} timed out after ${opts.timeoutMs ?? 120_000} ms`)));
      req.on('error', reject);
      req.end(opts.body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Counts occurrences of `needle` across chunk boundaries (outside any timed path). */
export function occurrenceCounter(needle: string): { onChunk: (c: Buffer) => void; count: () => number } {
  const pat = Buffer.from(needle);
  let carry = Buffer.alloc(0);
  let n = 0;
  return {
    onChunk(c) {
      const buf = carry.length ? Buffer.concat([carry, c]) : c;
      let at = buf.indexOf(pat);
      let lastEnd = 0;
      while (at >= 0) {
        n++;
        lastEnd = at + pat.length;
        at = buf.indexOf(pat, lastEnd);
      }
      const keepFrom = Math.max(lastEnd, buf.length - (pat.length - 1));
      carry = Buffer.from(buf.subarray(keepFrom));
    },
    count: () => n,
  };
}

export function median(xs: number[]): number {
  return percentile(xs, 50);
}

/** Nearest-rank percentile. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = xs.slice().sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * s.length);
  return s[Math.min(s.length - 1, Math.max(0, rank - 1))]!;
}
