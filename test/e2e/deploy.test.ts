import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { X509Certificate } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { kubectl, kubectlOk } from '../support/kubectl.js';
import { helm } from '../support/helm.js';
import { memberRequest } from '../fleet/http.js';
import { ALERTS_FILE, promtool, readRecording, recordedNames, seriesNames } from '../support/alert-series.js';
import { STORE_CHECK_TIMEOUT_MS } from '../../src/registry/defaults.js';

/**
 * deploy/: the manifests, the CRD and the Helm chart are accepted by a real apiserver (server-side
 * dry run, in the namespace they name, made for real and removed after), the chart passes
 * `helm lint --strict` and renders for both fleet sources, and the ClusterRole that hub admins
 * bind lets a user through the hub's authorization on every path under /fleet.
 */
const fleet = inject('fleet');
const member = fleet.members[0]!;
const deploy = resolve(import.meta.dirname, '..', '..', 'deploy');
const chart = resolve(deploy, 'helm', 'flotilla');
const NS = 'flotilla-system';

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  rules?: unknown[];
}

let home: string;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'flotilla-helm-'));
  // A server-side dry run of a namespaced object needs its namespace to exist.
  // --save-config: an apply (dry run) of the manifests' Namespace then warns of nothing.
  const r = await kubectl(member.kubeconfig, ['create', 'namespace', NS, '--save-config']);
  if (r.code !== 0 && !r.stderr.includes('AlreadyExists')) throw new Error(r.stderr);
});

afterAll(async () => {
  await kubectl(member.kubeconfig, ['delete', 'namespace', NS, '--wait=false', '--ignore-not-found']);
  rmSync(home, { recursive: true, force: true });
});

async function render(set: string[]): Promise<{ text: string; objects: K8sObject[] }> {
  const r = await helm(['template', 'flotilla', chart, '--namespace', NS, '--include-crds', ...set.flatMap((s) => ['--set', s])], { home });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const objects = parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null);
  return { text: r.stdout, objects };
}

async function serverDryRun(text: string): Promise<string[]> {
  const r = await kubectl(member.kubeconfig, ['apply', '--dry-run=server', '-o', 'name', '-f', '-'], { input: text });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return r.stdout.trim().split('\n');
}

const find = (objects: K8sObject[], kind: string, name?: string) => objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));

describe('deploy/', () => {
  it('has a CRD for hub-cluster configuration that an apiserver accepts', async () => {
    const r = await kubectl(member.kubeconfig, ['apply', '--dry-run=server', '-f', resolve(deploy, 'crds', 'fleets.flotilla.io.yaml')]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('customresourcedefinition.apiextensions.k8s.io/fleets.flotilla.io created (server dry run)');
  });

  it('has manifests that an apiserver accepts (server-side dry run)', async () => {
    const names = await serverDryRun(readFileSync(resolve(deploy, 'flotilla.yaml'), 'utf8'));
    expect(names).toEqual([
      'namespace/flotilla-system',
      'serviceaccount/flotilla',
      'clusterrole.rbac.authorization.k8s.io/flotilla',
      'clusterrolebinding.rbac.authorization.k8s.io/flotilla',
      'clusterrolebinding.rbac.authorization.k8s.io/flotilla:system:auth-delegator',
      'rolebinding.rbac.authorization.k8s.io/flotilla:extension-apiserver-authentication-reader',
      'role.rbac.authorization.k8s.io/flotilla-secrets',
      'rolebinding.rbac.authorization.k8s.io/flotilla-secrets',
      'clusterrole.rbac.authorization.k8s.io/flotilla-fleet-user',
      'configmap/flotilla-fleet',
      'statefulset.apps/flotilla',
      'service/flotilla-pods',
      'service/flotilla',
      'poddisruptionbudget.policy/flotilla',
      'apiservice.apiregistration.k8s.io/v1alpha1.search.flotilla.io',
    ]);
  });
});

describe('deploy/helm/flotilla', () => {
  it('passes helm lint --strict for both fleet sources and for a flotilla outside the cluster', async () => {
    for (const set of [[], ['fleet.source=hub'], ['service.externalName=localhost', 'persistence.enabled=false', 'replicaCount=1']]) {
      const r = await helm(['lint', '--strict', chart, ...set.flatMap((s) => ['--set', s])], { home });
      expect(r.stdout, set.join(',')).toContain('0 chart(s) failed');
      expect(r.code).toBe(0);
    }
  });

  it('fails helm lint when a template is broken (the lint is not a formality)', async () => {
    const broken = join(home, 'broken');
    cpSync(chart, broken, { recursive: true });
    const file = join(broken, 'templates', 'service.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace('{{- end }}\n{{- if include "flotilla.runsPods" . }}', '{{- if include "flotilla.runsPods" . }}'));
    const r = await helm(['lint', '--strict', broken], { home });
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/unexpected EOF|1 chart\(s\) failed/);
  });

  it('renders the configMap source, and the apiserver accepts every object', async () => {
    const { text, objects } = await render([]);
    const sts = find(objects, 'StatefulSet')!;
    const pod = (sts.spec as { template: { spec: { containers: { args: string[]; securityContext: Record<string, unknown> }[]; securityContext: Record<string, unknown> } } }).template.spec;
    const args = pod.containers[0]!.args;
    expect(args).toContain('--config=/etc/flotilla/config/fleet.yaml');
    expect(args).toContain('--hub-in-cluster');
    expect(args).not.toContain('--fleet=default');
    // Each tenant's member-side policy, kept on the members by flotilla unless the values say not to.
    expect(args).toContain('--apply-tenant-policy');
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, fsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.containers[0]!.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    expect(find(objects, 'ConfigMap', 'flotilla-fleet')?.data?.['fleet.yaml']).toContain('resource: pods');
    // The Fleet's RBAC only for the hub source; the aggregated apiserver's for both.
    expect(find(objects, 'ClusterRole', 'flotilla')).toBeUndefined();
    expect(find(objects, 'ClusterRoleBinding', 'flotilla:system:auth-delegator')).toBeDefined();
    const names = await serverDryRun(text);
    expect(names).toContain('statefulset.apps/flotilla');
    expect(names).toContain('apiservice.apiregistration.k8s.io/v1alpha1.search.flotilla.io');
    expect(names).toContain('customresourcedefinition.apiextensions.k8s.io/fleets.flotilla.io');
  });

  it('gives the store check its whole time before liveness counts (a startupProbe), in the chart and the manifests', async () => {
    interface Probe { httpGet: { path: string }; periodSeconds: number; failureThreshold: number }
    interface Container { name: string; startupProbe?: Probe; livenessProbe?: Probe }
    const containersOf = (o: K8sObject | undefined) => (o?.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers;
    const manifests = parseAllDocuments(readFileSync(resolve(deploy, 'flotilla.yaml'), 'utf8')).map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null);
    const { objects } = await render([]);
    for (const workload of [find(objects, 'StatefulSet'), manifests.find((o) => o.kind === 'StatefulSet' || o.kind === 'Deployment')]) {
      const c = containersOf(workload).find((x) => x.name === 'flotilla')!;
      // Flotilla listens only after the check: a probe budget below its timeout (plus starting) restarts a slow check into itself.
      expect(c.startupProbe?.httpGet.path).toBe('/livez');
      expect(c.startupProbe!.periodSeconds * c.startupProbe!.failureThreshold).toBeGreaterThan(STORE_CHECK_TIMEOUT_MS / 1000 + 30);
      expect(c.livenessProbe?.httpGet.path).toBe('/livez');
    }
  });

  it('renders the hub source, and the apiserver accepts every object', async () => {
    const { text, objects } = await render(['fleet.source=hub', 'fleet.name=prod']);
    const args = (find(objects, 'StatefulSet')!.spec as { template: { spec: { containers: { args: string[] }[] } } }).template.spec.containers[0]!.args;
    expect(args).toContain('--fleet=prod');
    expect(args).toContain('--hub-in-cluster');
    expect(args.some((a) => a.startsWith('--config'))).toBe(false);
    expect(args).toContain('--apply-tenant-policy');
    expect(find(objects, 'ConfigMap', 'flotilla-fleet')).toBeUndefined();
    expect(find(objects, 'ClusterRole', 'flotilla')?.rules).toEqual([
      { apiGroups: ['flotilla.io'], resources: ['fleets'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['flotilla.io'], resources: ['fleets/status'], verbs: ['get', 'update', 'patch'] },
    ]);
    expect(find(objects, 'Role', 'flotilla-secrets')).toBeDefined();
    const names = await serverDryRun(text);
    expect(names).toContain('clusterrole.rbac.authorization.k8s.io/flotilla');
    expect(names).toContain('statefulset.apps/flotilla');
  });

  it('makes one CA for the serving pair and the APIService, naming the Service as the hub dials it', async () => {
    const { objects } = await render([]);
    const secret = find(objects, 'Secret', 'flotilla-tls')!;
    const decode = (k: string) => Buffer.from(secret.data![k]!, 'base64').toString('utf8');
    const ca = new X509Certificate(decode('ca.crt'));
    const cert = new X509Certificate(decode('tls.crt'));
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.subjectAltName).toContain('DNS:flotilla.flotilla-system.svc');
    const api = find(objects, 'APIService')!.spec as { caBundle: string; service: { name: string; namespace: string; port: number } };
    expect(Buffer.from(api.caBundle, 'base64').toString('utf8')).toBe(decode('ca.crt'));
    expect(api.service).toEqual({ namespace: NS, name: 'flotilla', port: 443 });
  });

  it('points the hub at a flotilla outside the cluster with an ExternalName Service', async () => {
    const { text, objects } = await render(['service.externalName=localhost', 'service.targetPort=9443']);
    expect(find(objects, 'StatefulSet')).toBeUndefined();
    expect(find(objects, 'PodDisruptionBudget')).toBeUndefined();
    const svc = find(objects, 'Service', 'flotilla')!.spec as { type: string; externalName: string };
    expect(svc).toMatchObject({ type: 'ExternalName', externalName: 'localhost' });
    // ExternalName maps no ports: the hub dials the APIService's port on that host.
    expect((find(objects, 'APIService')!.spec as { service: { port: number } }).service.port).toBe(9443);
    const cert = new X509Certificate(Buffer.from(find(objects, 'Secret', 'flotilla-tls')!.data!['tls.crt']!, 'base64'));
    expect(cert.subjectAltName).toContain('DNS:localhost');
    const names = await serverDryRun(text);
    expect(names).toContain('service/flotilla');
  });

  it('tells after an install how to reach the fleet through the hub (NOTES, for both sources)', async () => {
    for (const set of [[], ['fleet.source=hub', 'fleet.name=prod']]) {
      const r = await helm(['install', 'flotilla', chart, '--namespace', NS, '--dry-run=server', '--kubeconfig', member.kubeconfig, ...set.flatMap((s) => ['--set', s])], { home });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const notes = r.stdout.slice(r.stdout.indexOf('NOTES:'));
      expect(notes).toContain('server: https://<this cluster\'s apiserver>/apis/search.flotilla.io/v1alpha1/fleet');
      expect(notes).toContain(set.length ? 'reading the hub\'s Fleet "prod"' : 'from the ConfigMap flotilla-fleet');
    }
  });

  it('renders the dashboard, PrometheusRule and ServiceMonitor when asked, each as its kind expects', async () => {
    const plain = await render([]);
    expect(find(plain.objects, 'ConfigMap', 'flotilla-dashboard')).toBeDefined();
    expect(find(plain.objects, 'PrometheusRule')).toBeUndefined();
    expect(find(plain.objects, 'ServiceMonitor')).toBeUndefined();
    const { objects } = await render(['monitoring.prometheusRule.enabled=true', 'monitoring.prometheusRule.labels.release=kps', 'monitoring.serviceMonitor.enabled=true', 'monitoring.dashboard.annotations.grafana_folder=Fleet']);
    const dashboard = find(objects, 'ConfigMap', 'flotilla-dashboard') as K8sObject & { metadata: { labels: Record<string, string>; annotations: Record<string, string> } };
    expect(dashboard.metadata.labels.grafana_dashboard).toBe('1');
    expect(dashboard.metadata.annotations.grafana_folder).toBe('Fleet');
    const json = JSON.parse(dashboard.data!['flotilla.json']!) as { uid: string; panels: unknown[] };
    expect(json.uid).toBe('flotilla');
    // The PrometheusRule carries the rules file promtool checks, unchanged.
    const rule = find(objects, 'PrometheusRule')! as K8sObject & { metadata: { labels: Record<string, string> } };
    expect(rule.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(rule.metadata.labels.release).toBe('kps');
    expect(rule.spec).toEqual(parseAllDocuments(readFileSync(ALERTS_FILE, 'utf8'))[0]!.toJS());
    const monitor = find(objects, 'ServiceMonitor')!.spec as { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; scheme: string; tlsConfig: { ca: { secret: { name: string } }; serverName: string } }[] };
    expect(monitor.endpoints[0]).toMatchObject({ port: 'https', scheme: 'https', tlsConfig: { ca: { secret: { name: 'flotilla-tls' } }, serverName: 'flotilla.flotilla-system.svc' } });
    // It selects the pods' Service alone: through both, each pod would be scraped twice.
    const selected = objects.filter((o) => o.kind === 'Service' && Object.entries(monitor.selector.matchLabels).every(([k, v]) => (o.metadata as { labels?: Record<string, string> }).labels?.[k] === v));
    expect(selected.map((o) => o.metadata.name)).toEqual(['flotilla-pods']);
    // No pods here, nothing to scrape.
    expect(find((await render(['service.externalName=localhost', 'monitoring.serviceMonitor.enabled=true'])).objects, 'ServiceMonitor')).toBeUndefined();
  });

  it('has a dashboard whose every expression parses and reads only series flotilla exports', async () => {
    const { objects } = await render([]);
    const json = JSON.parse(find(objects, 'ConfigMap', 'flotilla-dashboard')!.data!['flotilla.json']!) as { panels: { title: string; targets?: { expr: string }[] }[] };
    const exprs = json.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
    expect(exprs.length).toBeGreaterThan(20);
    const known = recordedNames(readRecording());
    expect(exprs.flatMap(({ panel, expr }) => seriesNames(expr).filter((n) => !known.has(n)).map((n) => `${panel}: ${n}`))).toEqual([]);
    // promtool parses each, with Grafana's variables as a dashboard would fill them in.
    const rules = { groups: [{ name: 'dashboard', rules: exprs.map(({ expr }, i) => ({ record: `dashboard:expr_${i}`, expr: expr.replaceAll('$__rate_interval', '5m').replace(/\$\{?\w+\}?/g, '.*') })) }] };
    const file = join(home, 'dashboard-rules.yaml');
    writeFileSync(file, JSON.stringify(rules));
    const r = await promtool(['check', 'rules', file]);
    expect(r.stdout + r.stderr).toContain(`SUCCESS: ${exprs.length} rules found`);
  });

  it('refuses a fleet source it does not know', async () => {
    const r = await helm(['template', 'flotilla', chart, '--set', 'fleet.source=file'], { home });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('fleet.source must be configMap or hub');
  });
});

describe('ClusterRole flotilla-fleet-user', () => {
  // The member plays the hub: without the APIService, a request the authorizer lets through is a
  // 404 (no such group), one it refuses a 403, so each path is checked as the hub's apiserver
  // parses it (resource fleet, name api, subresource v1, …) and RBAC matches it.
  const P = '/apis/search.flotilla.io/v1alpha1/fleet';
  const requests: [string, string][] = [
    ['GET', P],
    ['GET', `${P}/api/v1/pods`],
    ['GET', `${P}/api/v1/pods?watch=true`],
    ['GET', `${P}/api/v1/namespaces/default/pods/web`],
    ['GET', `${P}/apis/apps/v1/deployments`],
    ['GET', `${P}/clusters/east/api/v1/namespaces/default/pods`],
    ['GET', `${P}/version`],
    ['POST', `${P}/api/v1/namespaces/default/configmaps`],
    ['PUT', `${P}/api/v1/namespaces/default/configmaps/c`],
    ['PATCH', `${P}/apis/apps/v1/namespaces/default/deployments/web/scale`],
    ['DELETE', `${P}/api/v1/namespaces/default/pods/web`],
    ['POST', `${P}/api/v1/namespaces/default/pods/web/exec?command=ls`],
  ];
  const as = (user: string) => ({ headers: { 'Impersonate-User': user }, contentType: 'application/merge-patch+json' });
  const statusOf = async (user: string, method: string, path: string) => (await memberRequest(member, method, path, method === 'GET' || method === 'DELETE' ? undefined : {}, as(user))).status;

  beforeAll(async () => {
    const role = readFileSync(resolve(deploy, 'flotilla.yaml'), 'utf8').split(/^---$/m).find((d) => d.includes('name: flotilla-fleet-user'))!;
    await kubectlOk(member.kubeconfig, ['apply', '-f', '-'], { input: role });
    await kubectlOk(member.kubeconfig, ['create', 'clusterrolebinding', 'flotilla-test-fleet-user', '--clusterrole=flotilla-fleet-user', '--user=fleet-alice']);
    // The rule a reader of the brief might write: "fleet/*" is no wildcard in RBAC.
    const slashStar = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'flotilla-test-fleet-slash-star' },
      rules: [{ apiGroups: ['search.flotilla.io'], resources: ['fleet', 'fleet/*'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] }],
    };
    await kubectlOk(member.kubeconfig, ['apply', '-f', '-'], { input: JSON.stringify(slashStar) });
    await kubectlOk(member.kubeconfig, ['create', 'clusterrolebinding', 'flotilla-test-fleet-slash-star', '--clusterrole=flotilla-test-fleet-slash-star', '--user=fleet-carol']);
  });

  afterAll(async () => {
    for (const obj of ['clusterrolebinding/flotilla-test-fleet-user', 'clusterrole/flotilla-fleet-user', 'clusterrolebinding/flotilla-test-fleet-slash-star', 'clusterrole/flotilla-test-fleet-slash-star']) {
      await kubectl(member.kubeconfig, ['delete', obj, '--ignore-not-found']);
    }
  });

  it('lets a bound user through on every path under /fleet, and no one else', async () => {
    for (const [method, path] of requests) {
      expect(await statusOf('fleet-alice', method, path), `${method} ${path} as a bound user`).toBe(404);
      expect(await statusOf('fleet-bob', method, path), `${method} ${path} unbound`).toBe(403);
    }
  });

  it('would not with a "fleet/*" rule: the hub refuses /fleet/api/v1/pods', async () => {
    expect(await statusOf('fleet-carol', 'GET', P)).toBe(404);
    expect(await statusOf('fleet-carol', 'GET', `${P}/api/v1/pods`)).toBe(403);
  });
});
