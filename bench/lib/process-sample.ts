import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * What a long-running process holds, read from the outside through /proc: its anonymous resident
 * memory (RssAnon: the heap, buffers and native allocations, not the mapped store file the kernel
 * may drop), its open file descriptors, and its TCP connections to given ports (a member's).
 */
export interface ProcessHoldings {
  rssAnonBytes: number;
  fds: number;
  /** Established TCP connections of this process whose remote port is one of `ports`. */
  connections: number;
}

export function processHoldings(pid: number, ports: readonly number[]): ProcessHoldings {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const anon = /^RssAnon:\s+(\d+) kB/m.exec(status);
  const sockets = new Set<string>();
  let fds = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    fds++;
    let target = '';
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed since the listing
    }
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m) sockets.add(m[1]!);
  }
  return { rssAnonBytes: anon ? Number(anon[1]) * 1024 : NaN, fds, connections: connectionsTo(pid, sockets, ports) };
}

/** TCP state 01 is ESTABLISHED in /proc/net/tcp. */
const ESTABLISHED = '01';

/**
 * The process's sockets (by inode) that /proc/<pid>/net/tcp{,6} lists as established to one of
 * `ports`. Those tables hold the whole network namespace's sockets; the inodes pick the process's.
 */
function connectionsTo(pid: number, inodes: ReadonlySet<string>, ports: readonly number[]): number {
  const wanted = new Set(ports.map((p) => p.toString(16).toUpperCase().padStart(4, '0')));
  let n = 0;
  for (const table of ['tcp', 'tcp6']) {
    let text = '';
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      if (f.length < 10 || f[3] !== ESTABLISHED) continue;
      const remotePort = f[2]!.split(':')[1]!;
      if (wanted.has(remotePort) && inodes.has(f[9]!)) n++;
    }
  }
  return n;
}

/** A least-squares line through (x, y) points: its slope per unit of x, and the mean of y. */
export function linearTrend(points: readonly (readonly [number, number])[]): { slope: number; mean: number } {
  const n = points.length;
  if (n < 2) return { slope: NaN, mean: n ? points[0]![1] : NaN };
  let sx = 0;
  let sy = 0;
  for (const [x, y] of points) {
    sx += x;
    sy += y;
  }
  const mx = sx / n;
  const my = sy / n;
  let sxy = 0;
  let sxx = 0;
  for (const [x, y] of points) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
  }
  return { slope: sxx === 0 ? NaN : sxy / sxx, mean: my };
}
