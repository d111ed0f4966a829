/**
 * What the conformance harness runs: the subsets (ginkgo focus expressions over the upstream test
 * names), the skip list with the reason for each pattern, and the small subset CI runs. The same
 * focus, skip list and seed apply to both sides (the member directly, and flotilla in front of it),
 * so the two pass sets differ only by what flotilla changes.
 */

export interface Skip {
  /** A ginkgo regular expression, matched against the full test name. */
  pattern: string;
  reason: string;
}

/**
 * Tests that cannot pass on the test fleet's members, whoever is in front of them: kwok nodes run
 * no containers (pods become Running and Ready, but no process listens, serves HTTP or writes
 * output; every Job pod completes successfully at once), so anything that talks to a workload, or
 * needs a container to fail or keep running, fails on the member directly as well. Each entry was
 * seen failing or hanging against the member directly, or follows from what the test's fixture
 * container must do (the Job entries); none is here because flotilla fails it.
 */
export const SKIPS: Skip[] = [
  {
    pattern: String.raw`\[sig-api-machinery\] AdmissionWebhook`,
    reason: 'deploys a webhook server pod (agnhost) that the apiserver calls through a service; kwok runs no container, so no webhook answers',
  },
  {
    pattern: String.raw`\[sig-api-machinery\] CustomResourceConversionWebhook`,
    reason: 'deploys a conversion webhook server pod; kwok runs no container, so conversions fail',
  },
  {
    pattern: String.raw`\[sig-api-machinery\] CustomResourceFieldSelectors`,
    reason: 'its custom resource has a conversion webhook served by a pod; kwok runs no container',
  },
  {
    pattern: String.raw`\[sig-api-machinery\] OrderedNamespaceDeletion namespace deletion should delete pod first`,
    reason: 'expects the pod to linger with a deletionTimestamp while its container stops; kwok removes a deleted pod at once',
  },
  {
    pattern: String.raw`\[sig-api-machinery\] Aggregator Should be able to support the .* Sample API Server`,
    reason: 'runs the sample apiserver in a pod behind an APIService; kwok runs no container',
  },
  {
    pattern: String.raw`\[sig-cli\] Kubectl client Guestbook application`,
    reason: 'checks the guestbook frontend answers HTTP through the service proxy; kwok runs no container',
  },
  {
    pattern: String.raw`\[sig-cli\] Kubectl client Update Demo`,
    reason: 'fetches data.json from the containers through the pod proxy; kwok runs no container',
  },
  {
    pattern: String.raw`\[sig-apps\] (ReplicationController|ReplicaSet) should serve a basic image on each replica`,
    reason: 'checks each replica answers HTTP through the pod proxy; kwok runs no container',
  },
  {
    pattern: String.raw`\[sig-apps\] Deployment deployment should support proportional scaling`,
    reason: 'holds a rollout back with an image that cannot be pulled (webserver:404); kwok runs any image',
  },
  {
    pattern: String.raw`\[sig-apps\] Daemon set \[Serial\] should rollback without unnecessary restarts`,
    reason: 'breaks a rollout with an image that cannot be pulled (foo:non-existent); kwok runs any image',
  },
  {
    pattern: String.raw`\[sig-apps\] StatefulSet Basic StatefulSet functionality \[StatefulSetBasic\] Should recreate evicted statefulset`,
    reason: 'expects the kubelet to reject a pod whose hostPort another pod holds; kwok admits every pod',
  },
  {
    pattern: String.raw`\[sig-cli\] Kubectl logs`,
    reason: 'expects the output of a real logs-generator container; kwok serves the fleet\'s fixed log file',
  },
  {
    pattern: String.raw`\[sig-apps\] Job (should delete a job|should apply changes to a job status|should adopt matching orphans and release non-matching pods|should allow to use a pod failure policy to ignore failure matching on DisruptionTarget condition)`,
    reason: 'waits for the job\'s pods to keep running; kwok completes every Job pod successfully at once',
  },
  {
    pattern: String.raw`\[sig-apps\] Job (should terminate job execution when the number of failed indexes exceeds maxFailedIndexes|should mark indexes as failed when the FailIndex action is matched|should execute all indexes despite some failing when using backoffLimitPerIndex|should allow to use the pod failure policy on exit code to fail the job early|with successPolicy succeeded(Indexes|Count) rule should succeeded even when some indexes remain pending)`,
    reason: 'needs containers that exit with an error; kwok completes every Job pod successfully',
  },
  {
    pattern: String.raw`\[sig-apps\] CronJob (should schedule multiple jobs concurrently|should replace jobs when ReplaceConcurrent)`,
    reason: 'waits for jobs that stay active; kwok completes every Job pod at once',
  },
  {
    pattern: String.raw`\[sig-apps\] StatefulSet Basic StatefulSet functionality \[StatefulSetBasic\] (Scaling should happen in predictable order and halt|Burst scaling should run to completion even with unhealthy pods|should perform rolling updates and roll backs of template modifications|should perform canary updates and phased rolling updates)`,
    reason: 'makes pods unready by moving httpd\'s index.html with exec; kwok\'s readiness does not follow a container\'s probe',
  },
];

/**
 * `[Slow]` tests (CronJob schedules, long waits) cost minutes each on both sides; they are left out
 * unless asked for (`--slow`), a budget choice, not a kwok limit.
 */
export const SLOW_SKIP: Skip = { pattern: String.raw`\[Slow\]`, reason: 'minutes each (schedules and long waits); run with --slow' };

export const SUBSETS: Record<string, string> = {
  'api-machinery': String.raw`\[sig-api-machinery\].*\[Conformance\]`,
  'apps-cli': String.raw`\[sig-(apps|cli)\].*\[Conformance\]`,
  all: String.raw`\[sig-(api-machinery|apps|cli)\].*\[Conformance\]`,
  // The API tests of sig-auth, sig-network and sig-instrumentation: their other [Conformance]
  // tests wait for containers (kwok runs none) or pod networking, and fail both ways.
  'auth-network-instrumentation': String.raw`\[sig-(auth|network|instrumentation)\].*(API operations|kube-root-ca|lifecycle of a ServiceAccount|update a ServiceAccount|serviceAccountToken|opting out|Events|pointing to API Server|with a selector specified|EndpointSliceMirroring|change the type|service status lifecycle|collection of services|listing all namespaces|secure master service|lifecycle of an Endpoint).*\[Conformance\]`,
};

/**
 * What CI runs on every `npm test` (test/e2e/conformance.test.ts): conformance tests that pass both
 * directly and through today's flotilla and take seconds each, so any of them failing through
 * flotilla is a regression. Grow it as flotilla's causes get fixed (the full run's report lists
 * candidates: tests that pass both ways).
 */
export const CI_TESTS: string[] = [
  '[sig-api-machinery] AggregatedDiscovery should support raw aggregated discovery endpoint Accept headers [Conformance]',
  '[sig-api-machinery] FieldValidation should detect unknown and duplicate fields of a typed object [Conformance]',
  '[sig-cli] Kubectl client Kubectl describe should check if kubectl describe prints relevant information for rc and pods [Conformance]',
  '[sig-cli] Kubectl client Proxy server should support --unix-socket=/path [Conformance]',
  // Each failed through flotilla before issue 32's fixes, for one of its causes: a protobuf update
  // (namespaces; flowschemas and cronjobs, read live), a write right after a create (watchers),
  // a list right after a deletecollection (replicasets, protobuf client).
  '[sig-api-machinery] Namespaces [Serial] should apply an update to a Namespace [Conformance]',
  '[sig-api-machinery] API priority and fairness should support FlowSchema API operations [Conformance]',
  '[sig-apps] CronJob should support CronJob API operations [Conformance]',
  '[sig-api-machinery] Watchers should be able to start watching from a specific resource version [Conformance]',
  '[sig-apps] ReplicaSet should list and delete a collection of ReplicaSets [Conformance]',
  // Not [Conformance], but what every Table client assumes: the name first. They failed while
  // flotilla put its Cluster column first (a cached pod, cached nodes, a live paged list).
  '[sig-api-machinery] Servers with support for Table transformation should return pod details',
  '[sig-api-machinery] Servers with support for Table transformation should return generic metadata details across all namespaces for nodes',
  '[sig-api-machinery] Servers with support for Table transformation should return chunks of table results for list calls',
  // Not [Conformance]: client-go lists compared with create answers and informers (cmp.Equal).
  // They failed while flotilla gave every list item its kind, and answered the metadata client
  // in JSON where a member answers protobuf.
  '[sig-api-machinery] API Streaming (aka. WatchList) [FeatureGate:WatchList] [Beta] [Serial] should NOT be requested by client-go\'s List method when WatchListClient is enabled',
  '[sig-api-machinery] API Streaming (aka. WatchList) [FeatureGate:WatchList] [Beta] [Serial] should NOT be requested by metadata client\'s List method when WatchListClient is enabled',
  '[sig-api-machinery] API Streaming (aka. WatchList) [FeatureGate:WatchList] [Beta] [Serial] should be requested by metadatainformer when WatchListClient is enabled',
  // Not [Conformance]: legacy discovery had no storageVersionHash (aggregated discovery has none).
  '[sig-api-machinery] Discovery Custom resource should have storage version hash',
  // Not [Conformance]: a watch by a client that takes protobuf alone was 406 (the cache holds JSON).
  '[sig-api-machinery] client-go should negotiate watch and report errors with accept "application/vnd.kubernetes.protobuf"',
  // Other SIGs' API tests of resources read live: a CSR's /approval was 404 through flotilla.
  '[sig-auth] Certificates API [Privileged:ClusterAdmin] should support CSR API operations [Conformance]',
  '[sig-instrumentation] Events API should ensure that an event can be fetched, patched, deleted, and listed [Conformance]',
  '[sig-network] EndpointSlice should support creating EndpointSlice API operations [Conformance]',
  '[sig-network] Ingress API should support creating Ingress API operations [Conformance]',
  // Not [Conformance]: /metrics/slis was 404 through flotilla.
  '[sig-instrumentation] MetricsGrabber should grab all metrics slis from API server.',
];

/** The default seed: the same order on both sides and from run to run, unless changed. */
export const DEFAULT_SEED = 1;

export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A focus that matches the given full test names. ginkgo matches focus against the suite's
 * description, a space and the test name, so a name is anchored at its end only (every name
 * starts with its SIG's bracket, so no other test ends with it).
 */
export function focusOnNames(names: string[]): string {
  return names.map((n) => `${escapeRegExp(n)}$`).join('|');
}

export function skipExpression(skips: Skip[]): string {
  return skips.map((s) => `(${s.pattern})`).join('|');
}
