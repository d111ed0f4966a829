import { startRelay } from './fault-relay.js';

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

export async function startRoundRobinFront(backends: number[]): Promise<RoundRobinFront> {
  const connections = new Map<number, number>();
  let pool = backends;
  let next = 0;
  const relay = await startRelay(() => {
    const port = pool[next++ % pool.length]!;
    connections.set(port, (connections.get(port) ?? 0) + 1);
    return port;
  });
  return {
    port: relay.port,
    url: `https://127.0.0.1:${relay.port}`,
    connections,
    cut: relay.cut,
    only: (ports) => {
      pool = ports ?? backends;
    },
    close: relay.close,
  };
}
