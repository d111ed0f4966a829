import type { ClusterConfig } from '../registry/fleet-config.js';
import { MemberClient } from '../members/member-client.js';
import { Heartbeat, type MemberHeartbeat, type Silence } from '../members/heartbeat.js';
import type { Store } from '../store/store.js';
import { Semaphore } from '../util/semaphore.js';
import type { StructuredLog } from '../util/structured-log.js';
import { watchIdentity, type RelistMember } from './member-identity.js';
import { logMemberChange } from './transitions-log.js';

/**
 * The fleet's members as the configuration has them: per cluster its client, the semaphore
 * bounding its full lists, its heartbeat and its identity checks, made when it joins and ended
 * when it leaves or its connection changes. The cache manager stops a leaving member's cachers
 * before its client closes.
 */

export interface Member {
  config: ClusterConfig;
  client: MemberClient;
  listSlots: Semaphore;
  /** Ends the member's identity checks (member-identity.ts) when it leaves the fleet. */
  identity: AbortController;
}

/** What probing a member asks for: cheap, public, and not ready while the member cannot serve. */
const HEARTBEAT_PATH = '/readyz';

const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/** What identifies a cluster's connection: a change here means new clients and fresh cachers. */
function connectionOf(c: ClusterConfig): string {
  return JSON.stringify([c.kubeconfig, c.context, c.server, c.caFile, c.tokenFile, c.insecureSkipTLSVerify]);
}

function sameLabels(a: Readonly<Record<string, string>> | undefined, b: Readonly<Record<string, string>> | undefined): boolean {
  const x = Object.entries(a ?? {});
  return x.length === Object.keys(b ?? {}).length && x.every(([k, v]) => b?.[k] === v);
}

export class MemberSet {
  private readonly members = new Map<string, Member>();
  /** Probes every member; its interval follows the configuration (500 ms until the first one). */
  private readonly heartbeat = new Heartbeat(500);

  constructor(
    private readonly store: Store,
    private readonly logs: StructuredLog,
    /** Ends every member's probes and checks at once: the manager's stop. */
    private readonly signal: AbortSignal,
    /** Lists a member found to be a new cluster again (member-identity.ts). */
    private readonly relistMember: RelistMember,
  ) {
    this.heartbeat.onChange = (change) => logMemberChange(this.logs, change);
  }

  /**
   * Moves to the configuration's clusters: a member removed, or whose connection changed, is
   * handed to `leaving` (`removed` when it is gone from the configuration) and then closed; one
   * kept takes its new configuration; one new (or reconnected) joins. Returns the members kept
   * whose labels changed (what cluster search terms read).
   */
  async apply(clusters: readonly ClusterConfig[], maxInflightLists: number, heartbeatMs: number, leaving: (name: string, removed: boolean) => Promise<void>): Promise<string[]> {
    this.heartbeat.setInterval(heartbeatMs);
    const relabelled: string[] = [];
    const wanted = new Map(clusters.map((c) => [c.name, c]));
    for (const [name, m] of this.members) {
      const c = wanted.get(name);
      if (!c || connectionOf(c) !== connectionOf(m.config)) {
        await leaving(name, !c);
        this.heartbeat.untrack(name);
        m.identity.abort();
        m.client.close();
        this.members.delete(name);
      } else {
        if (!sameLabels(m.config.labels, c.labels)) relabelled.push(name);
        m.config = c;
      }
    }
    for (const c of clusters) {
      if (!this.members.has(c.name)) await this.join(c, maxInflightLists);
    }
    return relabelled;
  }

  private async join(c: ClusterConfig, maxInflightLists: number): Promise<void> {
    const client = await MemberClient.create(c);
    const identity = new AbortController();
    this.members.set(c.name, { config: c, client, listSlots: new Semaphore(maxInflightLists), identity });
    if (this.signal.aborted) return;
    client.onAnswer = () => this.heartbeat.heard(c.name);
    this.heartbeat.track(c.name, (signal) => client.probe(HEARTBEAT_PATH, signal));
    void watchIdentity(c.name, client, this.store, this.relistMember, this.logs, AbortSignal.any([this.signal, identity.signal]));
  }

  get(name: string): Member | undefined {
    return this.members.get(name);
  }

  /** The members in the fleet's order of preference: priority (higher first), then configuration order. */
  clusterNames(): string[] {
    return [...this.members.values()].sort((a, b) => b.config.priority - a.config.priority).map((m) => m.config.name);
  }

  clusterLabels(name: string): Readonly<Record<string, string>> {
    return this.members.get(name)?.config.labels ?? NO_LABELS;
  }

  /** How long a member has been silent, and why (see Heartbeat); undefined while it answers. */
  silence(cluster: string): Silence | undefined {
    return this.heartbeat.silence(cluster);
  }

  heartbeats(): MemberHeartbeat[] {
    return this.heartbeat.status();
  }

  /** Stops probing and checking every member; their clients stay open for the cachers still stopping. */
  stopProbes(): void {
    this.heartbeat.stop();
    for (const m of this.members.values()) m.identity.abort();
  }

  close(): void {
    for (const m of this.members.values()) m.client.close();
  }
}
