/**
 * Columns as kubectl prints them: a header in capitals, cells left-aligned and three spaces apart,
 * the last column not padded. A cell may carry a tone, shown in colour when the output is a TTY;
 * widths are measured on the plain text, so colour never shifts a column.
 */
export type Tone = 'good' | 'warn' | 'bad' | 'dim';
export interface Cell {
  text: string;
  tone?: Tone;
}

const ANSI: Record<Tone, string> = { good: '32', warn: '33', bad: '31', dim: '2' };
const GAP = '   ';

export function colorize(text: string, tone: Tone | undefined, color: boolean): string {
  return color && tone && text ? `\u001b[${ANSI[tone]}m${text}\u001b[0m` : text;
}

export function renderTable(header: readonly string[], rows: readonly (readonly (string | Cell)[])[], color: boolean): string {
  const cells = rows.map((row) => row.map((c): Cell => (typeof c === 'string' ? { text: c } : c)));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]?.text.length ?? 0)));
  const line = (row: readonly Cell[]) =>
    row
      .map((c, i) => (i === row.length - 1 ? colorize(c.text, c.tone, color) : colorize(c.text, c.tone, color) + ' '.repeat(widths[i]! - c.text.length)))
      .join(GAP)
      .trimEnd();
  return [line(header.map((text) => ({ text }))), ...cells.map(line)].join('\n') + '\n';
}

/** A duration as kubectl's AGE column shows it: 45s, 3m20s, 12m, 5h, 3d. */
export function shortDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 ? `${m}m${s % 60}s` : `${m}m`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}
