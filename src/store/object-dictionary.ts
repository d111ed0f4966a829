import { createHash } from 'node:crypto';

/**
 * The LZ4 dictionary the stored objects are compressed with (object-compression.ts). LZ4 finds
 * no long repeats inside one object of a few KB, but every object repeats the API's vocabulary
 * and the apiserver's defaults (`"terminationMessagePath":"/dev/termination-log"`, the
 * not-ready and unreachable tolerations, the service account token volume, …): with a dictionary
 * holding them, each repeat is a 3-byte reference.
 *
 * The dictionary is one Pod exactly as kube-apiserver 1.34 serves it for
 * `kubectl create deployment web --image=nginx:1.25 --port=8080` (the test fleet; managedFields
 * dropped and the cluster annotation added, as flotilla stores it), in the apiserver's field
 * order, which is the order of the bytes it matches. Pods are most of what a fleet caches; other
 * kinds share its metadata and condition vocabulary.
 *
 * Small on purpose: a 16 KB one of nine kinds did no better on pods, and lmdb-js, which compresses
 * what the ingest workers did not (object-compression.ts), loads the dictionary into LZ4 for every
 * such value, about 2 µs per KB of dictionary.
 * Measured on bench pods (2.5 KB served, 100k of them, inserted as ten clusters' lists
 * interleave): file per object 4.11 KB uncompressed, 2.07 KB with lmdb-js's own dictionary,
 * 1.24 KB with this one.
 *
 * The stored bytes can only be read with the dictionary they were written with: the store keeps
 * DICTIONARY_DIGEST beside its format and empties itself when either differs.
 */
const POD = {
  kind: 'Pod',
  apiVersion: 'v1',
  metadata: {
    name: 'web-7d4b9c6f5d-x2k4p',
    generateName: 'web-7d4b9c6f5d-',
    namespace: 'default',
    uid: '68219a95-167a-4dc5-bf65-c5b4513826ec',
    resourceVersion: '237',
    generation: 1,
    creationTimestamp: '2026-01-01T00:00:00Z',
    labels: { app: 'web', 'pod-template-hash': '7d4b9c6f5d' },
    ownerReferences: [
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d4b9c6f5d', uid: '16f65679-3db1-4547-8f40-85e86d2d2c4f', controller: true, blockOwnerDeletion: true },
    ],
    annotations: { 'search.flotilla.io/cluster': 'east' },
  },
  spec: {
    volumes: [
      {
        name: 'kube-api-access-ffn7t',
        projected: {
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
          ],
          defaultMode: 420,
        },
      },
    ],
    containers: [
      {
        name: 'nginx',
        image: 'nginx:1.25',
        ports: [{ containerPort: 8080, protocol: 'TCP' }],
        resources: {},
        volumeMounts: [{ name: 'kube-api-access-ffn7t', readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }],
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
        imagePullPolicy: 'IfNotPresent',
      },
    ],
    restartPolicy: 'Always',
    terminationGracePeriodSeconds: 30,
    dnsPolicy: 'ClusterFirst',
    serviceAccountName: 'default',
    serviceAccount: 'default',
    nodeName: 'east-node-0',
    securityContext: {},
    schedulerName: 'default-scheduler',
    tolerations: [
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    ],
    priority: 0,
    enableServiceLinks: true,
    preemptionPolicy: 'PreemptLowerPriority',
  },
  status: {
    phase: 'Running',
    conditions: [
      { type: 'Initialized', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-01-01T00:00:00Z' },
      { type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-01-01T00:00:00Z' },
      { type: 'ContainersReady', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-01-01T00:00:00Z' },
      { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-01-01T00:00:00Z' },
    ],
    hostIP: '127.0.0.1',
    podIP: '10.0.0.2',
    podIPs: [{ ip: '10.0.0.2' }],
    startTime: '2026-01-01T00:00:00Z',
    containerStatuses: [
      { name: 'nginx', state: { running: { startedAt: '2026-01-01T00:00:00Z' } }, lastState: {}, ready: true, restartCount: 0, image: 'nginx:1.25', imageID: '' },
    ],
    qosClass: 'BestEffort',
  },
};

export const OBJECT_DICTIONARY: Buffer = Buffer.from(JSON.stringify(POD));

/** Identifies the dictionary in the store's format record. */
export const DICTIONARY_DIGEST: string = createHash('sha256').update(OBJECT_DICTIONARY).digest('hex').slice(0, 16);
