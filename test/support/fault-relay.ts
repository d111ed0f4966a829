import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A TCP relay the tests put between a client and servers, for the network faults they inject:
 * `cut()` resets every relayed connection (both ends see an error, as after a crash or a reset),
 * `hold()` stops forwarding in both directions without closing anything (a partition: bytes wait,
 * connections look open) until `release()` delivers what waited; connections made while held wait
 * too. Each new connection goes to the port `pickPort` names (one member, or the next of several
 * replicas as a Service spreads them: round-robin-front.ts).
 */
export interface FaultRelay {
  port: number;
  cut(): void;
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

export function startRelay(pickPort: () => number): Promise<FaultRelay> {
  const sockets = new Set<Socket>();
  const waiting: { to: Socket; chunk: Buffer }[] = [];
  let held = false;
  const server: Server = createServer((client) => {
    const upstream = connect(pickPort(), '127.0.0.1');
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      sockets.add(a);
      a.on('data', (chunk: Buffer) => {
        if (held) waiting.push({ to: b, chunk });
        else b.write(chunk);
      });
      a.on('end', () => b.end());
      a.on('error', () => b.destroy());
      a.on('close', () => {
        sockets.delete(a);
        b.destroy();
      });
    }
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        port: (server.address() as AddressInfo).port,
        cut: () => {
          for (const s of sockets) s.resetAndDestroy();
        },
        hold: () => {
          held = true;
        },
        release: () => {
          held = false;
          for (const { to, chunk } of waiting.splice(0)) if (!to.destroyed) to.write(chunk);
        },
        close: () => new Promise((r) => {
          for (const s of sockets) s.destroy();
          server.close(() => r());
        }),
      });
    });
  });
}

/** A relay to one server (a member). */
export function startFaultRelay(targetPort: number): Promise<FaultRelay> {
  return startRelay(() => targetPort);
}
