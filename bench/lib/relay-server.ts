import { readFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:https';
import type { ClientRequest, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SplicedListReader, mergeSplicedLists, type SplicedMemberList } from '../../src/api/fleet-object/index.js';
import { encodeGlobalRV } from '../../src/api/global-rv.js';
import { BufferPool } from '../../src/util/buffer-pool.js';

/**
 * A relay process (forked by bench live) that answers each GET by asking the member for the same
 * path `names` times at once, as flotilla asks each member of a fleet (keep-alive TLS, the
 * member's bearer token), without looking at the answers. No JSON is read or edited: the time is
 * what a fleet list costs any Node relay on this machine (the members' lists, their bytes in over
 * TLS and out again), the floor under flotilla's live list.
 *
 * Buffered (as flotilla answers, so that a member failing mid-answer can still be named in a
 * Warning header): the answers are read to the end and written back one after the other.
 * Streaming (`stream`): the answer's head goes out at once and every chunk of every member's answer
 * is written the moment it arrives, interleaved, so the relay's work overlaps the members'. That
 * is no list a client could read; it is the lowest floor any proxy that passes the bytes on has.
 *
 * Editing (`edit`, buffered): each answer is read as flotilla reads a live list, with flotilla's own
 * code (api/fleet-object's SplicedListReader as it arrives, in buffers kept between lists as
 * flotilla keeps them, then mergeSplicedLists under a global resourceVersion), each ask shown as
 * one of `clusters`: the same bytes flotilla answers, and the
 * floor under a proxy that must edit every item (its cluster annotation, its global RV) with no
 * authentication, authorization or framework around it.
 *
 * Watch fan-out (`watch`): every GET joins one watch, opened on the upstream with the first GET's
 * path and query, and each chunk of that stream is written to every joined response the moment it
 * arrives (chunked, as flotilla writes a flush to each watcher). With flotilla as the upstream,
 * the lines are flotilla's own, byte for byte: what writing them to that many TLS watchers costs
 * this machine with no cache, no encoding and no queue behind them, the floor under flotilla's
 * watch fan-out.
 */
export interface RelayServerSpec {
  cert: string;
  key: string;
  /** The upstream: the member (or, for the watch floor, flotilla). */
  member: { server: string; token: string; caFile: string };
  names: number;
  stream?: boolean;
  watch?: boolean;
  edit?: boolean;
  /** The cluster names each ask is shown as (edit). */
  clusters?: string[];
}

const spec = JSON.parse(process.argv[2]!) as RelayServerSpec;
const member = new URL(spec.member.server);
const agent = new Agent({ keepAlive: true, maxSockets: 64, ca: readFileSync(spec.member.caFile) });

/** The member's answer to `path`, its chunks given to `onChunk` as they arrive, or gathered. */
function ask(path: string, accept: string, onChunk?: (chunk: Buffer) => void): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const r = request({ host: member.hostname, port: member.port, path, agent, headers: { authorization: `Bearer ${spec.member.token}`, accept } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', onChunk ?? ((c: Buffer) => chunks.push(c)));
      res.once('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`member answered ${res.statusCode}`))));
      res.once('error', reject);
    });
    r.once('error', reject);
    r.end();
  });
}

/** The buffers answers are gathered in (edit), bounded as flotilla's live lists' (forward/live/member-answers.ts). */
const listBuffers = new BufferPool(32 * 1024 * 1024, 8 * 1024 * 1024);

/** The member's list to `path`, spliced as it arrives and shown as `cluster`'s (edit); `release` gives its buffer back. */
function askSpliced(path: string, accept: string, cluster: string): Promise<SplicedMemberList & { release: () => void }> {
  return new Promise((resolve, reject) => {
    const r = request({ host: member.hostname, port: member.port, path, agent, headers: { authorization: `Bearer ${spec.member.token}`, accept } }, (res) => {
      const reader = new SplicedListReader(cluster, { pool: listBuffers });
      res.on('data', (c: Buffer) => reader.push(c));
      res.once('end', () => {
        const list = res.statusCode === 200 ? reader.end() : undefined;
        if (list) resolve({ list, body: reader.body, release: () => reader.release() });
        else reject(new Error(`member answered ${res.statusCode} or a list it could not splice`));
      });
      res.once('error', reject);
    });
    r.once('error', reject);
    r.end();
  });
}

/** The members' lists as one, as flotilla merges them: the first's kind, a global RV of every member's. */
function merged(lists: readonly SplicedMemberList[], clusters: readonly string[]): Buffer {
  const rvs: Record<string, string> = {};
  lists.forEach((l, i) => {
    const md = l.list.head['metadata'] as { resourceVersion?: unknown } | undefined;
    if (typeof md?.resourceVersion === 'string') rvs[clusters[i]!] = md.resourceVersion;
  });
  return mergeSplicedLists(lists, lists[0]!.list.head, { resourceVersion: encodeGlobalRV(rvs) });
}

const watchers = new Set<ServerResponse>();
let upstream: ClientRequest | undefined;

/** `res` receives the upstream watch's bytes from now on; the first to join opens that watch. */
function joinWatch(path: string, accept: string, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
  // The watcher counts itself connected on the response's head: sent now, not with the first event.
  res.flushHeaders();
  watchers.add(res);
  res.once('close', () => watchers.delete(res));
  if (upstream) return;
  upstream = request({ host: member.hostname, port: member.port, path, agent, headers: { authorization: `Bearer ${spec.member.token}`, accept } }, (up) => {
    up.on('data', (chunk: Buffer) => {
      for (const w of watchers) w.write(chunk);
    });
    up.once('close', () => {
      upstream = undefined;
      for (const w of watchers) w.end();
    });
  });
  upstream.once('error', () => {
    upstream = undefined;
    for (const w of watchers) w.destroy();
  });
  upstream.end();
}

const server = createServer({ cert: readFileSync(spec.cert), key: readFileSync(spec.key) }, (req, res) => {
  const accept = typeof req.headers.accept === 'string' ? req.headers.accept : 'application/json';
  if (spec.watch) {
    joinWatch(req.url ?? '/', accept, res);
    return;
  }
  if (spec.edit) {
    const clusters = spec.clusters ?? Array.from({ length: spec.names }, (_, i) => `c${i}`);
    Promise.all(clusters.map((c) => askSpliced(req.url ?? '/', accept, c))).then(
      (lists) => {
        const body = merged(lists, clusters);
        for (const l of lists) l.release();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(body);
      },
      (e: Error) => {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(e.message);
      },
    );
    return;
  }
  if (spec.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    const write = (chunk: Buffer) => void res.write(chunk);
    Promise.all(Array.from({ length: spec.names }, () => ask(req.url ?? '/', accept, write))).then(
      () => res.end(),
      () => res.destroy(),
    );
    return;
  }
  Promise.all(Array.from({ length: spec.names }, () => ask(req.url ?? '/', accept))).then(
    (bodies) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Buffer.concat(bodies));
    },
    (e: Error) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(e.message);
    },
  );
});
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
// Stopped by its PID (SIGKILL) from the bench; if the bench dies first, the IPC channel closes.
process.on('disconnect', () => process.exit(0));
