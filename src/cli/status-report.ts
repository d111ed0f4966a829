import { stringify as toYaml } from 'yaml';
import type { CacherStatus } from '../cacher/cacher-status.js';
import type { MemberHeartbeat } from '../members/heartbeat.js';
import type { OutputFormat } from './options.js';
import { renderTable, shortDuration, type Cell } from './text-table.js';

/**
 * flotilla's /status as the CLI reads it (`flotilla status`, `kubectl flotilla status` and
 * `clusters`): the members' heartbeats and each cacher's state, rendered as tables. Fields the CLI
 * does not know are kept for `-o json|yaml`, which prints the document as flotilla gave it.
 */
export interface MemberState extends MemberHeartbeat {
  /** The member's labels from the fleet file, when /status carries them. */
  labels?: Record<string, string>;
}

export interface FlotillaStatus {
  synced: boolean;
  members: MemberState[];
  cachers: CacherStatus[];
  [more: string]: unknown;
}

/** The document as it came, in the form asked for. */
export function formatDocument(doc: unknown, format: OutputFormat): string {
  return format === 'json' ? `${JSON.stringify(doc, null, 2)}\n` : toYaml(doc);
}

/** Reads the parts of a /status answer the tables need; anything else is refused by name. */
export function readStatus(body: string): FlotillaStatus {
  const doc = JSON.parse(body) as Partial<FlotillaStatus> | null;
  if (!doc || typeof doc !== 'object' || !Array.isArray(doc.members) || !Array.isArray(doc.cachers)) {
    throw new Error('the answer is not flotilla\'s /status (no members and cachers)');
  }
  return doc as FlotillaStatus;
}

/** Every member, in the heartbeat's order, then any only a cacher names. */
function memberNames(status: FlotillaStatus): string[] {
  return [...new Set([...status.members.map((m) => m.cluster), ...status.cachers.map((c) => c.cluster)])];
}

/**
 * A member's health in one word: `stale` while its heartbeat is silent (flotilla serves what it
 * holds of it, named in a Warning), else `errors` when a cacher of it fails, `syncing` while one
 * has not listed yet, `ok` otherwise.
 */
export function memberHealth(member: MemberState | undefined, cachers: readonly CacherStatus[]): Cell {
  if (member?.silent) return { text: 'stale', tone: 'bad' };
  if (cachers.some((c) => c.lastError && !c.synced)) return { text: 'errors', tone: 'bad' };
  if (cachers.some((c) => !c.synced)) return { text: 'syncing', tone: 'warn' };
  return { text: 'ok', tone: 'good' };
}

/** How long since the newest of these events, or `-` when none came yet. */
function sinceLastEvent(times: readonly (string | undefined)[], now: number): string {
  const newest = Math.max(...times.map((t) => (t ? Date.parse(t) : NaN)).filter((t) => !Number.isNaN(t)));
  return Number.isFinite(newest) ? shortDuration(now - newest) : '-';
}

/** One line of an error, cut to `max` characters: the table is for scanning, -o json has it whole. */
function firstLine(text: string | undefined, max = 100): string {
  const line = (text ?? '').split('\n')[0]!.trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Labels as kubectl's --show-labels writes them: key=value, by key, comma-separated. */
function labelsText(labels: Record<string, string> | undefined): string {
  return Object.entries(labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${k}=${v}`).join(',');
}

/** A LABELS column is shown once some member has a label: a fleet without any is spared an empty one. */
function anyLabels(status: FlotillaStatus): boolean {
  return status.members.some((m) => Object.keys(m.labels ?? {}).length > 0);
}

/** `kubectl flotilla clusters`: a row a member (health, cachers synced, objects held, last event, labels). */
export function renderClusters(status: FlotillaStatus, now: number, color: boolean): string {
  const withLabels = anyLabels(status);
  const rows = memberNames(status).map((name) => {
    const member = status.members.find((m) => m.cluster === name);
    const cachers = status.cachers.filter((c) => c.cluster === name);
    const row: (string | Cell)[] = [
      name,
      memberHealth(member, cachers),
      `${cachers.filter((c) => c.synced).length}/${cachers.length}`,
      String(cachers.reduce((n, c) => n + c.objects, 0)),
      sinceLastEvent(cachers.map((c) => c.lastEventAt), now),
      member?.silent ? silence(member, now) : '',
    ];
    if (withLabels) row.splice(5, 0, labelsText(member?.labels));
    return row;
  });
  const header = ['NAME', 'HEALTH', 'SYNCED', 'OBJECTS', 'LAST EVENT', ...(withLabels ? ['LABELS'] : []), 'SILENT'];
  return renderTable(header, rows, color);
}

function silence(member: MemberState, now: number): string {
  const since = member.silentSince ? ` for ${shortDuration(now - Date.parse(member.silentSince))}` : '';
  return firstLine(`silent${since}${member.lastError ? `: ${member.lastError}` : ''}`);
}

/**
 * `flotilla status`: whether the fleet is synced, the members (health, last answer to flotilla,
 * why silent) and a row per member and resource (phase, objects, time since its last event, the
 * cacher's last error).
 */
export function renderStatus(status: FlotillaStatus, now: number, color: boolean): string {
  const names = memberNames(status);
  const synced = status.synced ? { text: 'yes', tone: 'good' as const } : { text: 'no', tone: 'warn' as const };
  const head = renderTable(['SYNCED', 'MEMBERS', 'CACHERS'], [[synced, String(names.length), String(status.cachers.length)]], color);
  const withLabels = anyLabels(status);
  const members = renderTable(
    ['MEMBER', 'HEALTH', 'LAST ANSWER', ...(withLabels ? ['LABELS'] : []), 'ERROR'],
    names.map((name) => {
      const member = status.members.find((m) => m.cluster === name);
      const cachers = status.cachers.filter((c) => c.cluster === name);
      return [
        name,
        memberHealth(member, cachers),
        member?.lastAnswerAt ? `${shortDuration(now - Date.parse(member.lastAnswerAt))} ago` : '-',
        ...(withLabels ? [labelsText(member?.labels)] : []),
        { text: member?.silent ? silence(member, now) : '', tone: 'bad' as const },
      ];
    }),
    color,
  );
  const namespaced = status.cachers.some((c) => c.namespace);
  const cachers = [...status.cachers].sort((a, b) => names.indexOf(a.cluster) - names.indexOf(b.cluster) || a.resource.localeCompare(b.resource));
  const resources = renderTable(
    ['MEMBER', 'RESOURCE', ...(namespaced ? ['NAMESPACE'] : []), 'PHASE', 'SYNCED', 'OBJECTS', 'LAST EVENT', 'ERROR'],
    cachers.map((c) => [
      c.cluster,
      c.resource,
      ...(namespaced ? [c.namespace ?? ''] : []),
      { text: c.phase, tone: c.phase === 'watching' ? 'good' : c.phase === 'backoff' ? 'bad' : 'warn' },
      c.synced ? 'yes' : { text: 'no', tone: 'warn' },
      String(c.objects),
      sinceLastEvent([c.lastEventAt], now),
      { text: firstLine(c.lastError), tone: 'bad' },
    ]),
    color,
  );
  return `${head}\n${members}\n${resources}`;
}
