import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { selfSignedServingPair } from '../../../src/tls/serving-pair.js';
import { measureReads, type ReadPlan } from '../../../bench/lib/fleet-reads.js';
import { PeerAnswers } from '../../../bench/lib/peer-answers.js';
import { benchLine, type Figure } from '../../../bench/lib/report.js';
import { figureSink } from '../../../bench/lib/scenario.js';

// The form test/e2e/bench.test.ts holds every BENCH line to.
const LINE = /^BENCH ([a-z_]+)\.([a-z0-9_]+) = (-?[0-9.]+(?:e[+-]?[0-9]+)?|NaN|-?Infinity) (\S+)(?: \(target (<=|>=|=) (-?[0-9.]+): (ok|miss)\))?$/;

const dir = mkdtempSync(join(tmpdir(), 'peer-answers-'));
let caFile = '';
/** Accepts every connection and never says a word (not even the TLS handshake's). */
let silent: Server;
const sockets = new Set<Socket>();
/** Answers every request at once with a list of one pod. */
let answering: HttpsServer;
const plan: ReadPlan = { listRounds: 2, selectors: [], podPath: '/api/v1/namespaces/a/pods/b', getRuns: 0, pagedWalks: 0, timeoutMs: 300 };

const listen = (s: Server | HttpsServer) => new Promise<number>((r) => s.listen(0, '127.0.0.1', () => r((s.address() as AddressInfo).port)));
const endpoint = (port: number) => ({ server: `https://127.0.0.1:${port}`, token: 't', caFile });

beforeAll(async () => {
  const pair = await selfSignedServingPair(dir, ['127.0.0.1']);
  caFile = pair.certFile;
  silent = createTcpServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  answering = createHttpsServer({ cert: pair.cert, key: pair.key }, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"kind":"PodList","items":[{"metadata":{"name":"b","creationTimestamp":"2026-01-01T00:00:00Z"}}]}');
  });
});

afterAll(() => {
  for (const s of sockets) s.destroy();
  silent.close();
  answering.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a peer that does not answer in time', () => {
  it('is a figure (NaN, and a count of requests not answered), and the scenario goes on to the other side', async () => {
    const lines: string[] = [];
    const { add } = figureSink('karmada', (f: Figure) => lines.push(benchLine(f)));
    const peer = new PeerAnswers('karmada');
    const peerReads = await measureReads(endpoint(await listen(silent)), plan, peer);
    // The side measured after it is measured all the same.
    const ours = new PeerAnswers('flotilla');
    const ourReads = await measureReads(endpoint(await listen(answering)), plan, ours);
    for (const [side, reads, answers] of [['karmada', peerReads, peer], ['flotilla', ourReads, ours]] as const) {
      add(`${side}_list_p50_ms`, reads.list.p50, 'ms');
      add(`${side}_listed_objects`, reads.listObjects, 'objects');
      add(`${side}_timeouts`, answers.timeouts.length, 'requests');
    }

    // The fleet list, its Table and the list at resourceVersion=0: each unanswered, each said.
    expect(peer.timeouts).toEqual(['fleet list: no answer in 0.3 s', 'fleet Table: no answer in 0.3 s', 'fleet list at resourceVersion=0: no answer in 0.3 s']);
    expect(ours.said()).toEqual([]);
    for (const line of lines) expect(line, line).toMatch(LINE);
    expect(lines).toContain('BENCH karmada.karmada_list_p50_ms = NaN ms');
    expect(lines).toContain('BENCH karmada.karmada_timeouts = 3 requests');
    expect(lines).toContain('BENCH karmada.flotilla_listed_objects = 1 objects');
    expect(lines).toContain('BENCH karmada.flotilla_timeouts = 0 requests');
    expect(Number.isFinite(ourReads.list.p50)).toBe(true);
  });

  it('is given up on at its bound even when the call itself never ends', async () => {
    const answers = new PeerAnswers('karmada');
    const started = Date.now();
    const value = await answers.within('watch', 200, () => new Promise<number>(() => undefined), NaN);
    expect(value).toBeNaN();
    expect(answers.timeouts).toEqual(['watch: no answer in 0.2 s']);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('tells a failure from a silence', async () => {
    const answers = new PeerAnswers('karmada');
    expect(await answers.within('get', 5000, () => Promise.reject(new Error('/api/v1/pods: 504 timeout')), -1)).toBe(-1);
    expect(await answers.within('list', 5000, async () => 7, -1)).toBe(7);
    expect(answers.failures).toEqual(['get: /api/v1/pods: 504 timeout']);
    expect(answers.timeouts).toEqual([]);
  });
});
