import { readFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';

/**
 * A round-robin front that balances requests, not connections, as an L7 load balancer (an
 * ingress) does: it ends TLS with the replicas' serving pair and sends each request on a
 * connection of its own to the next replica. A client that keeps its connection alive (kubectl,
 * client-go) still has its requests spread over the replicas. Each request's backend, status and
 * body are recorded.
 */
export interface RequestFront {
  url: string;
  served: { port: number; path: string; status: number; body: string }[];
  close(): Promise<void>;
}

export function startRequestFront(backends: number[], tls: { cert: string; key: string; caFile: string }): Promise<RequestFront> {
  const ca = readFileSync(tls.caFile);
  const served: RequestFront['served'] = [];
  let next = 0;
  const server: Server = createServer({ cert: readFileSync(tls.cert), key: readFileSync(tls.key) }, (req, res) => {
    const port = backends[next++ % backends.length]!;
    // Answers uncompressed, so that what was served can be read back.
    const headers = { ...req.headers, host: `127.0.0.1:${port}` };
    delete headers['accept-encoding'];
    const upstream = request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers, ca, agent: false }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      const chunks: Buffer[] = [];
      answer.on('data', (c: Buffer) => {
        chunks.push(c);
        res.write(c);
      });
      answer.on('end', () => {
        served.push({ port, path: req.url ?? '', status: answer.statusCode ?? 0, body: Buffer.concat(chunks).toString() });
        res.end();
      });
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
        served,
        close: () => new Promise((r) => {
          server.closeAllConnections();
          server.close(() => r());
        }),
      });
    });
  });
}
