/**
 * pino's JSON lines written for a person at a terminal: time, level, message, then the other
 * fields as key=value. Used only when stdout is a TTY; anything else (a file, a pipe, a log
 * collector, a test) gets the JSON lines as they are.
 */
const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };
const COLOURS: Record<number, string> = { 20: '\x1b[90m', 40: '\x1b[33m', 50: '\x1b[31m', 60: '\x1b[31m' };
/** Fields every line has, or that say nothing to a person reading it. */
const HIDDEN = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

export function humanLine(json: string, colour: boolean): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(json) as Record<string, unknown>;
  } catch {
    // Not one of pino's lines: written as it came.
    return json;
  }
  const level = typeof o.level === 'number' ? o.level : 30;
  const time = typeof o.time === 'number' ? new Date(o.time).toISOString().slice(11, 23) : '';
  const fields = Object.entries(o)
    .filter(([k]) => !HIDDEN.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? (/[\s"=]/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v)}`)
    .join(' ');
  const head = `${time} ${LEVELS[level] ?? String(level)}`;
  const msg = typeof o.msg === 'string' ? o.msg : '';
  const start = colour && COLOURS[level] ? `${COLOURS[level]}${head}\x1b[0m` : head;
  return `${start} ${msg}${fields ? `  ${colour ? '\x1b[90m' : ''}${fields}${colour ? '\x1b[0m' : ''}` : ''}\n`;
}

/** A stream for pino that writes each line humanly to `out`. */
export function humanLogStream(out: NodeJS.WriteStream): { write(line: string): void } {
  const colour = out.hasColors?.() ?? false;
  return { write: (line) => void out.write(humanLine(line.trimEnd(), colour)) };
}
