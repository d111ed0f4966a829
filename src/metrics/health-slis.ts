import { Counter, Gauge, Registry } from 'prom-client';

/**
 * The health checks' service-level indicators at /metrics/slis, as every Kubernetes component
 * serves them: `kubernetes_healthcheck` (1 when a check last passed, 0 when it failed) and
 * `kubernetes_healthchecks_total` (every evaluation by outcome), labelled by check name and by the
 * endpoint that ran it (`healthz`, `livez`, `readyz`). Monitoring that scrapes apiservers' SLIs
 * reads flotilla's with the same queries.
 */
export interface HealthSlis {
  /** Records one evaluation of check `name` by endpoint `type`. */
  observe(name: string, type: string, passed: boolean): void;
  contentType: string;
  metrics(): Promise<string>;
}

export function createHealthSlis(): HealthSlis {
  const registry = new Registry();
  const last = new Gauge({ name: 'kubernetes_healthcheck', help: '[STABLE] This metric records the result of a single healthcheck.', labelNames: ['name', 'type'], registers: [registry] });
  const total = new Counter({ name: 'kubernetes_healthchecks_total', help: '[STABLE] This metric records the results of all healthcheck.', labelNames: ['name', 'status', 'type'], registers: [registry] });
  return {
    observe(name, type, passed) {
      last.set({ name, type }, passed ? 1 : 0);
      total.inc({ name, type, status: passed ? 'success' : 'error' });
    },
    contentType: registry.contentType,
    metrics: () => registry.metrics(),
  };
}
