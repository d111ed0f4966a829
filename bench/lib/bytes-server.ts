import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';

/**
 * A load-generator process (forked by bench peers) that answers every request with one body of
 * `bytes` bytes over TLS, written as flotilla writes a list: chunked, 256 KB at a time, waiting
 * for the socket to drain. What the same bytes cost this machine's TLS, loopback and client with
 * no store and no JSON behind them: the floor under a fleet list's time.
 */
export interface BytesServerSpec {
  cert: string;
  key: string;
  bytes: number;
}

const spec = JSON.parse(process.argv[2]!) as BytesServerSpec;
const chunk = Buffer.alloc(256 * 1024, 'x');
const server = createServer({ cert: readFileSync(spec.cert), key: readFileSync(spec.key) }, (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  let left = spec.bytes;
  const write = (): void => {
    while (left > 0) {
      const n = Math.min(left, chunk.length);
      left -= n;
      if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
        res.once('drain', write);
        return;
      }
    }
    res.end();
  };
  write();
});
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
// Stopped by its PID (SIGKILL) from the bench; if the bench dies first, the IPC channel closes.
process.on('disconnect', () => process.exit(0));
