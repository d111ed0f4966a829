/**
 * Go's duration syntax (time.ParseDuration), the one reader for it: the `timeout` query
 * parameter and metav1.Duration fields are written so.
 */

const GO_DURATION = /^[-+]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$/;
const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g;
const UNIT_NANOS: Record<string, number> = { ns: 1, us: 1e3, 'µs': 1e3, 'μs': 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** Whether a string is a Go duration ("1m30.5s", "-2h", "0"). */
export function isGoDuration(text: string): boolean {
  return GO_DURATION.test(text);
}

/** A Go duration's nanoseconds; 0 for anything that is not one. */
export function goDurationNanos(text: unknown): bigint {
  if (typeof text !== 'string' || !GO_DURATION.test(text)) return 0n;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(PART)) total += Number(amount) * UNIT_NANOS[unit!]!;
  return BigInt(Math.round(total)) * (text.startsWith('-') ? -1n : 1n);
}
