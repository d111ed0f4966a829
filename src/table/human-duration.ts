/**
 * The apiserver's "Age" cell format (apimachinery's duration.HumanDuration): cached rows carry the
 * age as of ingest, so flotilla recomputes it from creationTimestamp when it serves a Table.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  // Up to two seconds in the future still reads as "now": clocks of members and proxy differ.
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  const days = Math.trunc(hours / 24);
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${days}d` : `${days}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.trunc(days / 365);
  if (hours < 24 * 365 * 8) {
    const d = days % 365;
    return d === 0 ? `${years}y` : `${years}y${d}d`;
  }
  return `${years}y`;
}

/** The Age cell for an object created at `creationTimestamp`, as the apiserver prints it. */
export function ageCell(creationTimestamp: string | undefined, now = Date.now()): string {
  if (!creationTimestamp) return '<unknown>';
  const t = Date.parse(creationTimestamp);
  if (Number.isNaN(t)) return '<unknown>';
  return humanDuration(now - t);
}
