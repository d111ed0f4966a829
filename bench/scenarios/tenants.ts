import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { decodeContinue, type ContinueToken } from '../../src/api/continue-token.js';
import type { CachedResource } from '../../src/cacher/cache-roles.js';
import type { RawObject } from '../../src/ingest/decode.js';
import { listResponse, type ListBody } from '../../src/mux/reads.js';
import { SnapshotRegistry } from '../../src/mux/snapshots.js';
import { Store, type Change } from '../../src/store/store.js';
import { requestToMember, type FleetNames } from '../../src/tenancy/request-names.js';
import { Tenants, type Tenant } from '../../src/tenancy/tenant.js';
import type { ObjectNaming } from '../../src/tenancy/naming-direction.js';
import { buildReadView, VIEW_STEPS } from '../../src/view/steps.js';
import type { ReadView } from '../../src/view/read-view.js';
import type { ViewRequest, ViewStep } from '../../src/view/view-step.js';
import { percentile } from '../lib/http.js';
import { makePod } from '../lib/pods.js';
import { figureSink, type Scenario } from '../lib/scenario.js';
import { STORED_POD_ITEM, ingested, occurrences, storedPod } from '../lib/in-process.js';

const PODS = 'v1/pods';
const TENANTS = 100;
const NAMESPACES_PER_TENANT = 10;
/** Simulated members: cluster names in the store, no member behind them. */
const MEMBERS = 10;
const BATCH = 5000;
const LIST_ROUNDS = 9;
const ROUND_MS = 1000;
const PAGE = 500;
const TENANT_LABEL = 'bench.flotilla.io/tenant';
/** The tenant whose lists are timed: one from the middle of the key space. */
const MEASURED = 42;

const podInfo = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: [], categories: [], memberVerbs: [] };
const members = Array.from({ length: MEMBERS }, (_, m) => `m${m}`);
const pods: CachedResource = { info: podInfo, clusters: members };
const tenantId = (t: number) => `t${String(t).padStart(2, '0')}`;
const namespaceOf = (t: number, n: number) => `${tenantId(t)}-ns-${n}`;
/** How the edge sees the fleet when it rewrites a tenant's request (only pods are asked about). */
const FLEET: FleetNames = { hasGroup: () => false, namespaced: (group, resource) => (group === '' && resource === 'pods' ? true : undefined) };
/** An admin's view of a set of namespaces: the same objects as a tenant's, shown as stored. */
const namespaceSet = (namespaces: string[]): ViewStep => ({ name: 'bench-namespaces', apply: (view) => view.keepNamespaces(namespaces) });

/**
 * tenants: a tenant view's cost (src/view/step-tenant.ts), in this process on stores of its own as
 * `views` and `hierarchy` measure theirs: the objects are synthetic, committed as the cachers
 * commit them under 10 simulated member names (no member, no HTTP; sized like the fleets the
 * issue names, not fetched from one). Every timed list is read to its last byte; the lists are
 * checked before they are timed (counts, every item's namespace, the bytes themselves), so a view
 * that shows the wrong objects or the wrong names fails the scenario instead of timing fast.
 * - 1% of 1M pods (100k in the quick profile): 100 tenants `t00`…`t99` of 10 namespaces each
 *   (`t42-ns-0`…), pods spread evenly over tenants, namespaces and members, each labelled with its
 *   tenant. Tenant t42's fleet-wide list (its key range, every namespace cut to its own name)
 *   against an admin's list of the same pods by `bench.flotilla.io/tenant=t42` (the label index,
 *   then each object read by key), alternating 1 s rounds: unpaged (time and CPU) and paged
 *   (limit=500, every page to the end through the continue tokens, the tenant's put back into the
 *   member's names as the edge does). Beside them, the admin's list of the tenant's 10 namespaces
 *   (a namespace view: the same objects as stored), which leaves the presentation's own cost.
 * - A tenant's fleet list of 100k pods (20k quick) shaped as the `list` scenario's (bench/lib/pods.ts,
 *   ~1.7 KB as stored), all in the tenant's namespaces, against an admin's list of the same store,
 *   the very same objects: the cost of showing them in the tenant's names.
 */
export const tenants: Scenario = {
  name: 'tenants',
  async run(ctx, emit) {
    // 1M / 100k pods in the 1% store, 100k / 20k in the rewrite one; a hundredth of that in the bench's own test.
    const full = ctx.profile.name === 'full';
    const small = !full && ctx.profile.pods < 10_000;
    const perNamespaceMember = full ? 100 : small ? 1 : 10;
    const rewritePerNamespaceMember = full ? 1000 : small ? 20 : 200;
    // The end-to-end test's tiny run checks the scenario's form, not its figures: fewer rounds.
    const listRounds = small ? 3 : LIST_ROUNDS;
    const { figures, add } = figureSink('tenants', emit);
    const notes: string[] = [];
    const specs = Array.from({ length: TENANTS }, (_, t) => ({ id: tenantId(t), users: [`user-${t}`], groups: [], clusterScoped: {} }));
    const tenant = new Tenants(specs).all[MEASURED]!;
    const naming: ObjectNaming = { tenant, kinds: () => undefined, memberGroups: () => false };
    const measuredNamespaces = Array.from({ length: NAMESPACES_PER_TENANT }, (_, n) => namespaceOf(MEASURED, n));

    const onePercent = await withStore(join(ctx.dir, 'tenants-store'), async (store, snapshots) => {
      const fillStarted = performance.now();
      let rv = 1;
      let objectBytes = 0;
      for (const cluster of members) {
        let batch: Change[] = [];
        for (let t = 0; t < TENANTS; t++) {
          for (let n = 0; n < NAMESPACES_PER_TENANT; n++) {
            for (let p = 0; p < perNamespaceMember; p++) {
              const c = storedPod(cluster, namespaceOf(t, n), `p-${String(p).padStart(5, '0')}`, String(++rv), { [TENANT_LABEL]: tenantId(t), app: `app-${p % 8}` });
              objectBytes = c.bytes.length;
              batch.push(c);
              if (batch.length >= BATCH) {
                await store.commit({ cluster, resource: PODS }, batch, { rv: String(rv) }, { log: false, fresh: true });
                batch = [];
              }
            }
          }
        }
        if (batch.length) await store.commit({ cluster, resource: PODS }, batch, { rv: String(rv) }, { log: false, fresh: true });
      }
      const total = MEMBERS * TENANTS * NAMESPACES_PER_TENANT * perNamespaceMember;
      const expected = total / TENANTS;
      notes.push(`${total} synthetic pods (${objectBytes} B each as stored) of ${TENANTS} tenants × ${NAMESPACES_PER_TENANT} namespaces × ${MEMBERS} simulated members committed in ${((performance.now() - fillStarted) / 1000).toFixed(1)} s`);

      const request = (extra: Partial<ViewRequest>): ViewRequest => ({ resource: pods, watching: false, ...extra });
      const asTenant = buildReadView(request({ tenant: naming }));
      const byLabel = buildReadView(request({ labelSelector: `${TENANT_LABEL}=${tenant.id}` }));
      const byNamespaces = buildReadView(request({}), [...VIEW_STEPS, namespaceSet(measuredNamespaces)]);
      if (asTenant.prefix?.value !== tenant.prefix) throw new Error(`tenants: the tenant's view reads no key range of its own (prefix ${JSON.stringify(asTenant.prefix)})`);
      const listOf = (view: ReadView) => listResponse(store, { resource: pods, view, form: 'object', snapshots, caller: 'bench' });

      // Checked before timed: the same pods, in the tenant's names, and only its names.
      const tenantBody = collect(listOf(asTenant));
      const labelBody = collect(listOf(byLabel));
      const namespacesBody = collect(listOf(byNamespaces));
      checkTenantList('1% list', tenantBody, labelBody, tenant, expected);
      if (!namespacesBody.equals(labelBody)) throw new Error('tenants: the admin lists of the tenant namespaces and of the tenant label differ');
      const pagedTenant = pagedWalk(store, snapshots, asTenant, tenant, true);
      const pagedLabel = pagedWalk(store, snapshots, byLabel, undefined, true);
      if (pagedTenant.items !== expected || pagedLabel.items !== expected) throw new Error(`tenants: paged lists hold ${pagedTenant.items} (tenant) and ${pagedLabel.items} (label) pods, expected ${expected}`);
      if (pagedTenant.pages !== Math.ceil(expected / PAGE) || pagedLabel.pages !== pagedTenant.pages) throw new Error(`tenants: paged lists took ${pagedTenant.pages} (tenant) and ${pagedLabel.pages} (label) pages, expected ${Math.ceil(expected / PAGE)}`);
      // The tenant's range holds only its objects: its first page counts the rest right (a label-selected list gives no count).
      if (expected > PAGE && pagedTenant.firstRemaining !== expected - PAGE) throw new Error(`tenants: the tenant's first page says ${pagedTenant.firstRemaining} pods remain, expected ${expected - PAGE}`);

      const unpaged = alternatingTimed({ tenant: () => consume(listOf(asTenant)), label: () => consume(listOf(byLabel)) }, ['tenant', 'label'], listRounds, ROUND_MS);
      add('tenant_list_objects', expected, 'objects');
      add('tenant_list_p50_ms', percentile(unpaged.ms.tenant, 50), 'ms');
      add('label_list_p50_ms', percentile(unpaged.ms.label, 50), 'ms');
      add('tenant_list_vs_label_list', percentile(unpaged.ms.tenant, 50) / percentile(unpaged.ms.label, 50), 'x', { op: '<=', value: 1.2 });
      add('tenant_list_cpu_ms', unpaged.cpuMs.tenant, 'ms');
      add('label_list_cpu_ms', unpaged.cpuMs.label, 'ms');
      add('tenant_list_cpu_vs_label_list', unpaged.cpuMs.tenant / unpaged.cpuMs.label, 'x');
      add('tenant_list_bytes', tenantBody.length, 'bytes');
      add('label_list_bytes', labelBody.length, 'bytes');
      notes.push(`unpaged lists of tenant ${tenant.id}'s ${expected} pods of ${total}: as the tenant (its key range ${tenant.prefix}…) and as an admin by ${TENANT_LABEL}=${tenant.id}; ${unpaged.ms.tenant.length} and ${unpaged.ms.label.length} lists in ${listRounds} alternating rounds of ${ROUND_MS} ms; CPU is the process's per list, averaged`);

      const paged = alternatingTimed({ tenant: () => pagedWalk(store, snapshots, asTenant, tenant, false).bytes, label: () => pagedWalk(store, snapshots, byLabel, undefined, false).bytes }, ['tenant', 'label'], listRounds, ROUND_MS);
      add('tenant_paged_p50_ms', percentile(paged.ms.tenant, 50), 'ms');
      add('label_paged_p50_ms', percentile(paged.ms.label, 50), 'ms');
      add('tenant_paged_vs_label_paged', percentile(paged.ms.tenant, 50) / percentile(paged.ms.label, 50), 'x');
      notes.push(`paged lists (limit=${PAGE}, ${pagedTenant.pages} pages walked through their continue tokens) of the same pods: ${paged.ms.tenant.length} and ${paged.ms.label.length} walks in ${listRounds} alternating rounds`);

      const presented = alternatingTimed({ tenant: () => consume(listOf(asTenant)), namespaces: () => consume(listOf(byNamespaces)) }, ['tenant', 'namespaces'], listRounds, ROUND_MS);
      add('namespaces_list_p50_ms', percentile(presented.ms.namespaces, 50), 'ms');
      add('tenant_vs_namespaces_list', percentile(presented.ms.tenant, 50) / percentile(presented.ms.namespaces, 50), 'x');
      notes.push(`the same pods as an admin's list of the tenant's ${NAMESPACES_PER_TENANT} namespaces (one key range each, shown as stored): the tenant's list against it is the presentation's cost on ${objectBytes} B pods; ${presented.ms.tenant.length} and ${presented.ms.namespaces.length} lists`);
      return { total, objectBytes };
    });

    await withStore(join(ctx.dir, 'tenants-rewrite-store'), async (store, snapshots) => {
      const fillStarted = performance.now();
      let rv = 1;
      let bytes = 0;
      let i = 0;
      for (const cluster of members) {
        let batch: Change[] = [];
        for (const ns of measuredNamespaces) {
          for (let p = 0; p < rewritePerNamespaceMember; p++, i++) {
            const pod = makePod(i, ns) as RawObject & { metadata: Record<string, unknown> };
            pod.metadata.uid = `uid-${i}`;
            pod.metadata.resourceVersion = String(++rv);
            const c = ingested(cluster, 'Pod', pod, String(rv));
            bytes += c.bytes.length;
            batch.push(c);
            if (batch.length >= BATCH) {
              await store.commit({ cluster, resource: PODS }, batch, { rv: String(rv) }, { log: false, fresh: true });
              batch = [];
            }
          }
        }
        if (batch.length) await store.commit({ cluster, resource: PODS }, batch, { rv: String(rv) }, { log: false, fresh: true });
      }
      const total = i;
      notes.push(`rewrite: ${total} synthetic pods shaped as the list scenario's (${Math.round(bytes / total)} B each as stored, an owner reference each), all in tenant ${tenant.id}'s ${NAMESPACES_PER_TENANT} namespaces, over ${MEMBERS} simulated members, committed in ${((performance.now() - fillStarted) / 1000).toFixed(1)} s`);

      const asTenant = buildReadView({ resource: pods, watching: false, tenant: naming });
      const asAdmin = buildReadView({ resource: pods, watching: false });
      const listOf = (view: ReadView) => listResponse(store, { resource: pods, view, form: 'object', snapshots, caller: 'bench' });
      const tenantBody = collect(listOf(asTenant));
      const adminBody = collect(listOf(asAdmin));
      checkTenantList('rewrite', tenantBody, adminBody, tenant, total);
      const rounds = alternatingTimed({ tenant: () => consume(listOf(asTenant)), admin: () => consume(listOf(asAdmin)) }, ['tenant', 'admin'], listRounds, full ? 2 * ROUND_MS : ROUND_MS);
      add('rewrite_objects', total, 'objects');
      add('tenant_fleet_list_p50_ms', percentile(rounds.ms.tenant, 50), 'ms');
      add('admin_fleet_list_p50_ms', percentile(rounds.ms.admin, 50), 'ms');
      add('tenant_rewrite_overhead', percentile(rounds.ms.tenant, 50) / percentile(rounds.ms.admin, 50), 'x', { op: '<=', value: 1.1 });
      add('tenant_fleet_list_cpu_ms', rounds.cpuMs.tenant, 'ms');
      add('admin_fleet_list_cpu_ms', rounds.cpuMs.admin, 'ms');
      add('tenant_rewrite_cpu_overhead', rounds.cpuMs.tenant / rounds.cpuMs.admin, 'x');
      add('tenant_fleet_list_bytes', tenantBody.length, 'bytes');
      add('admin_fleet_list_bytes', adminBody.length, 'bytes');
      notes.push(`rewrite: unpaged fleet lists of the same ${total} pods as tenant ${tenant.id} and as an admin; ${rounds.ms.tenant.length} and ${rounds.ms.admin.length} lists in ${listRounds} alternating rounds of ${full ? 2 * ROUND_MS : ROUND_MS} ms`);
    });
    return { figures, facts: { objects: onePercent.total, objectBytes: onePercent.objectBytes, objectBytesAre: 'per pod as stored (the 1% store)', notes } };
  },
};

/** A store of its own in `dir`, removed afterwards. */
async function withStore<T>(dir: string, body: (store: Store, snapshots: SnapshotRegistry) => Promise<T>): Promise<T> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const store = Store.open(dir);
  const snapshots = new SnapshotRegistry(store);
  try {
    return await body(store, snapshots);
  } finally {
    snapshots.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A list's body read to the end, every chunk taken as a response would take it: its bytes. */
function consume(body: ListBody): number {
  if (Buffer.isBuffer(body)) return body.length;
  let bytes = 0;
  for (const chunk of body.chunks) bytes += chunk.length;
  return bytes;
}

/** A list's body whole, for checking. */
function collect(body: ListBody): Buffer {
  return Buffer.isBuffer(body) ? body : Buffer.concat([...body.chunks]);
}

/**
 * That a tenant's list shows what the admin's shows, in the tenant's names: `expected` items in
 * both; every admin item in one of the tenant's namespaces and no tenant item's namespace with
 * the prefix; the first item in the tenant's first namespace; and byte for byte the admin's list
 * with the prefix cut out of each `metadata.namespace`, nothing else changed.
 */
function checkTenantList(what: string, tenantBody: Buffer, adminBody: Buffer, tenant: Tenant, expected: number): void {
  const fail = (why: string) => new Error(`tenants (${what}): ${why}`);
  const tenantText = tenantBody.toString('latin1');
  const adminText = adminBody.toString('latin1');
  const tenantItems = occurrences(tenantText, STORED_POD_ITEM);
  const adminItems = occurrences(adminText, STORED_POD_ITEM);
  if (tenantItems !== expected || adminItems !== expected) throw fail(`the lists hold ${tenantItems} (tenant) and ${adminItems} (admin) pods, expected ${expected}`);
  const prefixed = `"namespace":"${tenant.prefix}`;
  if (occurrences(adminText, prefixed) !== expected) throw fail(`the admin list holds ${occurrences(adminText, prefixed)} pods in the tenant's namespaces, expected ${expected}`);
  const parsed = JSON.parse(tenantBody.toString('utf8')) as { items: { metadata: { namespace: string; name: string } }[] };
  if (parsed.items.length !== expected) throw fail(`the tenant list parses to ${parsed.items.length} items, expected ${expected}`);
  const wrong = parsed.items.find((item) => item.metadata.namespace.startsWith(tenant.prefix) || !/^ns-\d+$/.test(item.metadata.namespace));
  if (wrong) throw fail(`the tenant sees pod ${wrong.metadata.name} in namespace ${wrong.metadata.namespace}`);
  const sample = parsed.items[0]!.metadata.namespace;
  if (sample !== tenant.tenantNamespace(`${tenant.prefix}ns-0`)) throw fail(`the first pod's namespace is ${sample}, expected ns-0`);
  if (tenantText !== adminText.replaceAll(prefixed, '"namespace":"')) throw fail('the tenant list is not the admin list with the namespaces cut');
}

/**
 * A paged list walked to its end (limit=500, each page's continue token into the next request; a
 * tenant's token put into the member's names as the edge does): its pages, bytes and, when
 * `count`, items and the first page's remainingItemCount.
 */
function pagedWalk(store: Store, snapshots: SnapshotRegistry, view: ReadView, tenant: Tenant | undefined, count: boolean): { pages: number; bytes: number; items: number; firstRemaining?: number } {
  let continueToken: ContinueToken | undefined;
  let pages = 0;
  let bytes = 0;
  let items = 0;
  let firstRemaining: number | undefined;
  for (;;) {
    const page = listResponse(store, { resource: pods, view, form: 'object', limit: PAGE, ...(continueToken ? { continueToken } : {}), snapshots, caller: 'bench' });
    if (!Buffer.isBuffer(page)) throw new Error('tenants: a page came as a stream');
    pages++;
    bytes += page.length;
    const head = page.toString('latin1', 0, Math.min(page.length, 2048));
    if (count) {
      items += occurrences(page.toString('latin1'), STORED_POD_ITEM);
      const remaining = /"remainingItemCount":(\d+)/.exec(head)?.[1];
      if (pages === 1 && remaining !== undefined) firstRemaining = Number(remaining);
    }
    const token = /"continue":"([^"]+)"/.exec(head)?.[1];
    if (token === undefined) return { pages, bytes, items, ...(firstRemaining !== undefined ? { firstRemaining } : {}) };
    const shown = tenant ? new URLSearchParams(requestToMember(`/api/v1/pods?limit=${PAGE}&continue=${token}`, 'GET', tenant, FLEET).split('?')[1]).get('continue')! : token;
    continueToken = decodeContinue(shown);
  }
}

/**
 * Two ways of doing one thing timed side by side, as in-process.ts alternatingRounds: `rounds`
 * rounds of `roundMs` each way, alternating which goes first. Every run's milliseconds per way,
 * and the process's CPU per run (user + system, averaged over the way's runs).
 */
function alternatingTimed<A extends string, B extends string>(ways: Record<A | B, () => unknown>, order: [A, B], rounds: number, roundMs: number): { ms: Record<A | B, number[]>; cpuMs: Record<A | B, number> } {
  const ms = { [order[0]]: [], [order[1]]: [] } as unknown as Record<A | B, number[]>;
  const cpuUs = { [order[0]]: 0, [order[1]]: 0 } as Record<A | B, number>;
  for (let round = 0; round < rounds; round++) {
    for (const way of round % 2 ? [order[1], order[0]] : order) {
      const started = performance.now();
      const cpu0 = process.cpuUsage();
      while (performance.now() - started < roundMs) {
        const t0 = performance.now();
        ways[way]();
        ms[way].push(performance.now() - t0);
      }
      const cpu = process.cpuUsage(cpu0);
      cpuUs[way] += cpu.user + cpu.system;
    }
  }
  const cpuMs = { [order[0]]: cpuUs[order[0]] / 1000 / ms[order[0]].length, [order[1]]: cpuUs[order[1]] / 1000 / ms[order[1]].length } as Record<A | B, number>;
  return { ms, cpuMs };
}
