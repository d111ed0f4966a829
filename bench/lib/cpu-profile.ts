/**
 * Preloaded into flotilla (`NODE_OPTIONS=--import .../cpu-profile.js`) by `npm run bench -- --cpu-prof`:
 * Node 20 refuses `--cpu-prof` in NODE_OPTIONS, so this profiles flotilla through the inspector.
 * - Main thread: `<dir>/<pid>-main.cpuprofile`, written when the process exits (a same-thread
 *   inspector session answers synchronously, so the 'exit' handler can stop and write).
 * - Worker threads (the ingest pool; preloads do not run in workers): profiled from the main thread
 *   through the NodeWorker domain, one segment every 2 s, `<pid>-worker<session>-<n>.cpuprofile`
 *   (workers are terminated without notice, so at most the last 2 s of each are lost).
 */
import { Session } from 'node:inspector';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.FLOTILLA_BENCH_CPU_PROF_DIR;
if (dir) {
  mkdirSync(dir, { recursive: true });
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 500 });
  session.post('Profiler.start');
  process.on('exit', () => {
    session.post('Profiler.stop', (err, result) => {
      if (!err) writeFileSync(join(dir, `${process.pid}-main.cpuprofile`), JSON.stringify(result.profile));
    });
  });

  let nextId = 1;
  const STOP = 1_000_000;
  const segments = new Map<string, number>();
  const toWorker = (sessionId: string, method: string, params: object = {}, id = nextId++) =>
    session.post('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id, method, params }) });
  session.on('NodeWorker.attachedToWorker', ({ params }) => {
    const sid = params.sessionId;
    segments.set(sid, 0);
    toWorker(sid, 'Profiler.enable');
    toWorker(sid, 'Profiler.setSamplingInterval', { interval: 500 });
    toWorker(sid, 'Profiler.start');
  });
  session.on('NodeWorker.detachedFromWorker', ({ params }) => segments.delete(params.sessionId));
  session.on('NodeWorker.receivedMessageFromWorker', ({ params }) => {
    const msg = JSON.parse(params.message) as { id?: number; result?: { profile?: unknown } };
    if (msg.id !== STOP || !msg.result?.profile) return;
    const n = segments.get(params.sessionId) ?? 0;
    segments.set(params.sessionId, n + 1);
    writeFileSync(join(dir, `${process.pid}-worker${params.sessionId}-${n}.cpuprofile`), JSON.stringify(msg.result.profile));
    toWorker(params.sessionId, 'Profiler.start');
  });
  session.post('NodeWorker.enable', { waitForDebuggerOnStart: false });
  setInterval(() => {
    for (const sid of segments.keys()) toWorker(sid, 'Profiler.stop', {}, STOP);
  }, 2000).unref();
}
