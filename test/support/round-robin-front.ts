import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A round-robin front over flotilla replicas, as a Service spreads connections over a chart's
 * pods: each new TCP connection goes to the next backend (TLS passes through: the replicas share
 * the serving certificate). `cut()` resets every open connection, so clients reconnect and land on
 * another replica; `only()` sends new connections to a subset (a replica being restarted is out).
 */
export interface RoundRobinFront {
  port: number;
  url: string;
  /** How many connections each backend port got. */
  connections: Map<number, number>;
  cut(): void;
  only(ports: number[] | undefined): void;
  close(): Promise<void>;
}

export function startRoundRobinFront(backends: number[]): Promise<RoundRobinFront> {
  const sockets = new Set<Socket>();
  const connections = new Map<number, number>();
  let pool = backends;
  let next = 0;
  const server: Server = createServer((client) => {
    const port = pool[next++ % pool.length]!;
    connections.set(port, (connections.get(port) ?? 0) + 1);
    const upstream = connect(port, '127.0.0.1');
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      sockets.add(a);
      a.pipe(b);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        sockets.delete(a);
        b.destroy();
      });
    }
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as AddressInfo).port;
      resolve({
        port,
        url: `https://127.0.0.1:${port}`,
        connections,
        cut: () => {
          for (const s of sockets) s.resetAndDestroy();
        },
        only: (ports) => {
          pool = ports ?? backends;
        },
        close: () => new Promise((r) => {
          for (const s of sockets) s.destroy();
          server.close(() => r());
        }),
      });
    });
  });
}
