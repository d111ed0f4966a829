import { describe, expect, it } from 'vitest';
import { Gauge, Registry } from 'prom-client';
import type { CacherStatus } from '../../../src/cacher/cacher-status.js';
import { CACHER_PHASES, CacherSeries } from '../../../src/metrics/cacher-series.js';

const statuses: CacherStatus[] = [
  { cluster: 'east', resource: 'v1/pods', phase: 'watching', synced: true, objects: 1200, relists: 1, watches: 3, historyResets: 0, rv: '4711', lastEventAt: '2026-11-26T10:00:00.000Z' },
  { cluster: 'east', resource: 'rbac.authorization.k8s.io/v1/roles', phase: 'listing', synced: false, objects: 0, relists: 0, watches: 0, historyResets: 0 },
  // Label values the exposition format must escape.
  { cluster: 'we"st\\2', resource: 'v1/configmaps', namespace: 'a\nb', phase: 'backoff', synced: true, objects: 7, relists: 2, watches: 1, historyResets: 0, rv: '9', lastError: 'refused' },
];

/** The same families as prom-client's labelled gauges render them: what /metrics served before. */
async function withPromClient(now: number): Promise<string> {
  const registry = new Registry();
  const labels = (s: CacherStatus) => ({ cluster: s.cluster, resource: s.resource, namespace: s.namespace ?? '' });
  const gauge = (name: string, help: string, value: (s: CacherStatus) => number | undefined) => {
    const g = new Gauge({ name, help, labelNames: ['cluster', 'resource', 'namespace'], registers: [registry] });
    for (const s of statuses) {
      const v = value(s);
      if (v !== undefined) g.set(labels(s), v);
    }
  };
  gauge('flotilla_cacher_objects', 'Objects cached for this cluster and resource.', (s) => s.objects);
  gauge('flotilla_cacher_synced', '1 once the cacher has listed its member at least once.', (s) => (s.synced ? 1 : 0));
  gauge('flotilla_cacher_relists_total', 'Full lists done (the first one, then one per expired watch).', (s) => s.relists);
  gauge('flotilla_cacher_resource_version', "The member's last resourceVersion the cache is complete up to.", (s) => (s.rv ? Number(s.rv) : undefined));
  gauge('flotilla_cacher_seconds_since_last_event', 'Seconds since the last watch event or bookmark.', (s) => (s.lastEventAt ? (now - Date.parse(s.lastEventAt)) / 1000 : undefined));
  gauge('flotilla_cacher_history_resets_total', "Times the member's history was found rewritten (resourceVersions went back, or a new cluster under the name) and its state listed again.", (s) => s.historyResets);
  gauge('flotilla_cacher_errored', '1 when the last attempt failed (see /status for the error).', (s) => (s.lastError ? 1 : 0));
  const phase = new Gauge({ name: 'flotilla_cacher_phase', help: 'The phase each cacher is in (1 for the current one).', labelNames: ['cluster', 'resource', 'namespace', 'phase'], registers: [registry] });
  for (const s of statuses) for (const p of CACHER_PHASES) phase.set({ ...labels(s), phase: p }, s.phase === p ? 1 : 0);
  return registry.metrics();
}

describe('CacherSeries', () => {
  it('renders the per-cacher families as prom-client does, escapes included', async () => {
    const now = Date.parse('2026-11-26T10:00:30.000Z');
    const realNow = Date.now;
    Date.now = () => now;
    try {
      const series = new CacherSeries(() => statuses);
      const ours = series.text();
      expect(ours.split('\n').filter(Boolean).sort()).toEqual((await withPromClient(now)).split('\n').filter(Boolean).sort());
      // A second scrape reuses the rendered labels and says the same.
      expect(series.text()).toBe(ours);
      expect(ours).toContain('flotilla_cacher_seconds_since_last_event{cluster="east",resource="v1/pods",namespace=""} 30\n');
      expect(ours).toContain('flotilla_cacher_phase{cluster="we\\"st\\\\2",resource="v1/configmaps",namespace="a\\nb",phase="backoff"} 1\n');
    } finally {
      Date.now = realNow;
    }
  });

});
