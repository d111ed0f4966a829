import type { CacherPhase, CacherStatus } from '../cacher/cacher-status.js';

/**
 * The per-cacher series of /metrics, written as Prometheus text straight from the cachers' status.
 *
 * A fleet of 100 clusters has 500 cachers (pods and the four RBAC resources the authorizer
 * caches), so 5,700 series. Set through prom-client's labelled gauges, each scrape hashed and
 * escaped every label set again: 15–40 ms of the event loop per scrape, more under load. A
 * cacher's labels never change, so each is rendered once and reused while the cacher lives.
 */
export const CACHER_PHASES = ['pending', 'listing', 'watching', 'backoff', 'stopped'] as const satisfies readonly CacherPhase[];

interface Family {
  name: string;
  help: string;
  value: (s: CacherStatus) => number | undefined;
}

const FAMILIES: readonly Family[] = [
  { name: 'flotilla_cacher_objects', help: 'Objects cached for this cluster and resource.', value: (s) => s.objects },
  { name: 'flotilla_cacher_synced', help: '1 once the cacher has listed its member at least once.', value: (s) => (s.synced ? 1 : 0) },
  { name: 'flotilla_cacher_relists_total', help: 'Full lists done (the first one, then one per expired watch).', value: (s) => s.relists },
  { name: 'flotilla_cacher_resource_version', help: "The member's last resourceVersion the cache is complete up to.", value: (s) => (s.rv ? Number(s.rv) : undefined) },
  {
    name: 'flotilla_cacher_seconds_since_last_event',
    help: 'Seconds since the last watch event or bookmark.',
    value: (s) => (s.lastEventAt ? (Date.now() - Date.parse(s.lastEventAt)) / 1000 : undefined),
  },
  { name: 'flotilla_cacher_history_resets_total', help: "Times the member's history was found rewritten (resourceVersions went back, or a new cluster under the name) and its state listed again.", value: (s) => s.historyResets },
  { name: 'flotilla_cacher_errored', help: '1 when the last attempt failed (see /status for the error).', value: (s) => (s.lastError ? 1 : 0) },
];
const PHASE_FAMILY = { name: 'flotilla_cacher_phase', help: 'The phase each cacher is in (1 for the current one).' };

/** A label value as the exposition format quotes it. */
function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function sample(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

export class CacherSeries {
  /** Each cacher's rendered labels (without braces), by cluster, resource and namespace. */
  private labels = new Map<string, string>();

  constructor(private readonly statuses: () => CacherStatus[]) {}

  /** Every per-cacher family, each with its HELP and TYPE lines, ending in a newline. */
  text(): string {
    const statuses = this.statuses();
    const previous = this.labels;
    // Rebuilt from the last scrape's: a cacher that is gone does not keep its entry.
    this.labels = new Map();
    const labels = statuses.map((s) => {
      const key = `${s.cluster}\u0000${s.resource}\u0000${s.namespace ?? ''}`;
      const text =
        previous.get(key) ??
        `cluster="${escapeLabel(s.cluster)}",resource="${escapeLabel(s.resource)}",namespace="${escapeLabel(s.namespace ?? '')}"`;
      this.labels.set(key, text);
      return text;
    });
    let out = '';
    for (const f of FAMILIES) {
      out += `# HELP ${f.name} ${f.help}\n# TYPE ${f.name} gauge\n`;
      for (let i = 0; i < statuses.length; i++) {
        const v = f.value(statuses[i]!);
        if (v !== undefined) out += `${f.name}{${labels[i]}} ${sample(v)}\n`;
      }
    }
    out += `# HELP ${PHASE_FAMILY.name} ${PHASE_FAMILY.help}\n# TYPE ${PHASE_FAMILY.name} gauge\n`;
    for (let i = 0; i < statuses.length; i++) {
      for (const phase of CACHER_PHASES) out += `${PHASE_FAMILY.name}{${labels[i]},phase="${phase}"} ${statuses[i]!.phase === phase ? 1 : 0}\n`;
    }
    return out;
  }
}
