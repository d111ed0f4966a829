/**
 * Realistic pods for seeding: what a Deployment's pod looks like once written (labels, owner
 * reference, two containers with env, resources, ports, probes and mounts), about 2.5 KB of JSON
 * as flotilla serves it (managedFields dropped), about 4.4 KB as the member stores it. Deterministic in the index, so a run can be repeated exactly.
 */
const APPS = ['web', 'cart', 'checkout', 'search', 'payments', 'catalog', 'auth', 'inventory'];
const TEAMS = ['storefront', 'platform', 'data', 'identity'];

/** Pods are grouped by consecutive index: `g10` is shared by 10 pods, `g50` by 50 (per member). */
export const GROUP_SIZES = [10, 50] as const;
export const GROUP_LABEL = (size: number) => `bench.flotilla.io/g${size}`;

/**
 * Label selectors that match a known number of seeded pods (per cluster name), from the middle of
 * the seeded range: a whole g<size> group, or one pod of a g10 group picked by its app (ten
 * consecutive pods cycle through the eight apps, so positions 2–7 hold an app only once).
 */
export function countedSelectors(pods: number): { selector: string; podsMatched: number }[] {
  const selectors: { selector: string; podsMatched: number }[] = GROUP_SIZES.map((size) => ({ selector: `${GROUP_LABEL(size)}=g${Math.floor(pods / 2 / size)}`, podsMatched: size }));
  const group = Math.floor(pods / 2 / 10);
  selectors.push({ selector: `${GROUP_LABEL(10)}=g${group},app=${APPS[(group * 10 + 2) % APPS.length]!}`, podsMatched: 1 });
  return selectors;
}

/**
 * The label selector of one key=value of the middle seeded pod that matches the number of seeded
 * pods (per cluster name) nearest to `wanted`, with that exact number: a g10 or g50 group, a
 * ReplicaSet's pod-template-hash (1000 pods), a team, a tier or an app.
 */
export function selectorNear(pods: number, wanted: number): { selector: string; podsMatched: number } {
  const labelsOf = (i: number) => (makePod(i, '') as { metadata: { labels: Record<string, string> } }).metadata.labels;
  const middle = labelsOf(Math.floor(pods / 2));
  const keys = [GROUP_LABEL(10), GROUP_LABEL(50), 'pod-template-hash', 'team', 'tier', 'app'];
  const counts = new Map<string, number>(keys.map((k) => [k, 0]));
  for (let i = 0; i < pods; i++) {
    const labels = labelsOf(i);
    for (const k of keys) if (labels[k] === middle[k]) counts.set(k, counts.get(k)! + 1);
  }
  const best = keys.reduce((a, b) => (Math.abs(counts.get(b)! - wanted) < Math.abs(counts.get(a)! - wanted) ? b : a));
  return { selector: `${best}=${middle[best]!}`, podsMatched: counts.get(best)! };
}

// The apimachinery alphabet (no vowels), as generated names use.
const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * A stable, random-looking, collision-free suffix: `n` times an odd multiplier coprime to 27 is a
 * bijection modulo 27^len, so distinct n below 27^len give distinct strings.
 */
function scrambled(n: number, len: number): string {
  const base = BigInt(ALPHABET.length);
  const space = base ** BigInt(len);
  let x = (BigInt(n) * 2654435761n + 12345n) % space;
  let s = '';
  for (let k = 0; k < len; k++) {
    s += ALPHABET[Number(x % base)];
    x /= base;
  }
  return s;
}

/** Pods are spread over this many nodes, pod i on node i mod NODES. */
const NODES = 250;

export function nodeName(node: number): string {
  return `node-${String(node).padStart(3, '0')}`;
}

/** How many of the first `pods` seeded pods (per cluster name) run on node `node`. */
export function podsOnNode(pods: number, node: number): number {
  return node < pods ? Math.floor((pods - 1 - node) / NODES) + 1 : 0;
}

export function podName(i: number): string {
  const app = APPS[i % APPS.length]!;
  return `${app}-${scrambled(Math.floor(i / 1000), 10)}-${scrambled(i % 1000, 5)}`;
}

export function makePod(i: number, namespace: string): object {
  const app = APPS[i % APPS.length]!;
  const team = TEAMS[i % TEAMS.length]!;
  const templateHash = scrambled(Math.floor(i / 1000), 10);
  const version = `v1.${(i >> 4) % 30}.${i % 7}`;
  const labels: Record<string, string> = {
    app,
    'app.kubernetes.io/name': app,
    'app.kubernetes.io/version': version,
    'pod-template-hash': templateHash,
    team,
    tier: i % 3 === 0 ? 'frontend' : 'backend',
  };
  for (const size of GROUP_SIZES) labels[GROUP_LABEL(size)] = `g${Math.floor(i / size)}`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName(i),
      namespace,
      labels,
      annotations: {
        'kubectl.kubernetes.io/default-container': app,
      },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: `${app}-${templateHash}`,
          uid: `5c7a${scrambled(i >> 10, 4)}-1f2e-4b6a-9c1d-${(100000000000 + (i >> 10)).toString(16).padStart(12, '0')}`,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      nodeName: nodeName(i % NODES),
      terminationGracePeriodSeconds: 30,
      // No projected token volume (admission would add ~0.9 KB of it per pod).
      automountServiceAccountToken: false,
      containers: [
        {
          name: app,
          image: `registry.example.com/shop/${app}:${version}`,
          imagePullPolicy: 'IfNotPresent',
          ports: [
            { name: 'http', containerPort: 8080, protocol: 'TCP' },
            { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
          ],
          env: [
            { name: 'APP_NAME', value: app },
            { name: 'DATABASE_URL', value: `postgres://${app}@db.${namespace}.svc:5432/${app}` },
            { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          ],
          resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '500m', memory: '512Mi' } },
          volumeMounts: [{ name: 'config', mountPath: '/etc/app', readOnly: true }],
        },
        {
          name: 'log-shipper',
          image: 'registry.example.com/infra/fluent-bit:3.1.4',
          args: ['--config=/fluent-bit/etc/fluent-bit.conf'],
          resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '64Mi' } },
        },
      ],
      volumes: [{ name: 'config', configMap: { name: `${app}-config` } }],
    },
  };
}
