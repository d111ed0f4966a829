import type { CacheHealth } from '../cacher/cache-roles.js';
import type { CacherStatus } from '../cacher/cacher-status.js';
import type { MemberClient } from '../members/member-client.js';
import type { MemberHeartbeat } from '../members/heartbeat.js';
import { FLEET_CONDITION_MESSAGE_MAX, FLEET_STATUS_INTERVAL_MS } from '../registry/defaults.js';

/**
 * What flotilla writes back to its Fleet (`/status`): whether the spec was taken, whether the cache
 * is complete, and per member whether it answers and how much of it is cached. Computed from what
 * flotilla knows now; written only when it differs from the object's status (so replicas that
 * agree write nothing), at most every few seconds, never on the serving path.
 */
export interface FleetCondition {
  type: 'Accepted' | 'Ready';
  status: 'True' | 'False';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export interface FleetMemberStatus {
  name: string;
  /** The member answers flotilla's heartbeat. */
  connected: boolean;
  /** Cached scopes (resource, or resource in a namespace) of this member that have listed once. */
  syncedResources: number;
  /** Cached scopes of this member (the authorizer's RBAC objects included). */
  resources: number;
  lastError?: string;
}

export interface FleetStatus {
  observedGeneration?: number;
  conditions: FleetCondition[];
  members: FleetMemberStatus[];
}

/** What the Fleet source knows: the last spec it read and what became of it. */
export interface FleetOutcome {
  generation?: number;
  /** undefined: accepted; else the validation messages (or why the Fleet could not be read). */
  rejected?: string;
  /** The members the running configuration names, plus those left out for want of a credential. */
  members: string[];
  /** Members left out of the running configuration, and why. */
  memberErrors: ReadonlyMap<string, string>;
}

export interface StatusInputs {
  outcome: FleetOutcome;
  cachers: CacherStatus[];
  heartbeats: MemberHeartbeat[];
  synced: boolean;
  /** The object's status now: its conditions' transition times are kept when nothing changed. */
  current?: Partial<FleetStatus>;
  now: string;
}

export function computeFleetStatus(i: StatusInputs): FleetStatus {
  const members = i.outcome.members.map((name): FleetMemberStatus => {
    const scopes = i.cachers.filter((c) => c.cluster === name);
    const beat = i.heartbeats.find((h) => h.cluster === name);
    const credential = i.outcome.memberErrors.get(name);
    const failing = scopes.find((c) => c.phase !== 'watching' && c.lastError);
    const lastError = credential ?? (beat?.silent ? beat.lastError : undefined) ?? failing?.lastError;
    return {
      name,
      connected: credential === undefined && beat !== undefined && !beat.silent && beat.lastAnswerAt !== undefined,
      syncedResources: scopes.filter((c) => c.synced).length,
      resources: scopes.length,
      ...(lastError ? { lastError: lastError.slice(0, FLEET_CONDITION_MESSAGE_MAX) } : {}),
    };
  });
  const gen = i.outcome.generation;
  const accepted = i.outcome.rejected === undefined;
  const missing = members.filter((m) => i.outcome.memberErrors.has(m.name)).map((m) => m.name);
  const unsynced = members.filter((m) => m.syncedResources < m.resources || (m.resources === 0 && !i.outcome.memberErrors.has(m.name))).map((m) => m.name);
  const ready = i.synced && missing.length === 0;
  const conditions: Omit<FleetCondition, 'lastTransitionTime'>[] = [
    accepted
      ? { type: 'Accepted', status: 'True', reason: 'Valid', message: 'the spec is the running configuration' }
      : { type: 'Accepted', status: 'False', reason: 'Invalid', message: i.outcome.rejected!.slice(0, FLEET_CONDITION_MESSAGE_MAX) },
    ready
      ? { type: 'Ready', status: 'True', reason: 'Synced', message: 'every cached resource of every member has been listed' }
      : missing.length > 0
        ? { type: 'Ready', status: 'False', reason: 'MissingCredentials', message: `no credentials for ${missing.join(', ')}` }
        : { type: 'Ready', status: 'False', reason: 'Syncing', message: unsynced.length > 0 ? `not yet listed: ${unsynced.join(', ')}` : 'resources are being discovered' },
  ];
  return {
    ...(gen !== undefined ? { observedGeneration: gen } : {}),
    conditions: conditions.map((c) => {
      const before = i.current?.conditions?.find((p) => p.type === c.type);
      const same = before && before.status === c.status && before.reason === c.reason && before.message === c.message;
      return { ...c, lastTransitionTime: same ? before.lastTransitionTime : i.now, ...(gen !== undefined ? { observedGeneration: gen } : {}) };
    }),
    members,
  };
}

/** Whether two statuses say the same (key order aside). */
export function sameStatus(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([p], [q]) => (p < q ? -1 : p > q ? 1 : 0))) : x,
  );
}

/**
 * Writes the status every `intervalMs` when it changed: a merge patch of the status subresource
 * (whole `conditions` and `members` lists, as a merge patch replaces lists).
 */
export class FleetStatusWriter {
  private timer?: NodeJS.Timeout;
  private writing = false;
  private lastWritten?: FleetStatus;
  private lastFailure?: string;

  constructor(
    private readonly hub: MemberClient,
    private readonly name: string,
    private readonly inputs: () => { outcome: FleetOutcome; current?: Partial<FleetStatus> } | undefined,
    private readonly health: CacheHealth,
    private readonly log: (line: string) => void,
    intervalMs = FLEET_STATUS_INTERVAL_MS,
  ) {
    this.timer = setInterval(() => void this.tick(), intervalMs);
    this.timer.unref();
  }

  /** The status as flotilla would write it now, or undefined while the Fleet is unknown. */
  compute(): { status: FleetStatus; current?: Partial<FleetStatus> } | undefined {
    const got = this.inputs();
    if (!got) return undefined;
    // Transition times come from the object, or from what this process wrote before the watch showed it.
    const previous = got.current?.conditions ? got.current : this.lastWritten;
    const status = computeFleetStatus({
      outcome: got.outcome,
      cachers: this.health.status(),
      heartbeats: this.health.heartbeats(),
      synced: this.health.isSynced(),
      ...(previous ? { current: previous } : {}),
      now: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    });
    return { status, ...(got.current ? { current: got.current } : {}) };
  }

  async tick(): Promise<void> {
    if (this.writing) return;
    const next = this.compute();
    // The watched object already says it, or this process wrote it and the watch has not caught up.
    if (!next || sameStatus(next.status, next.current) || sameStatus(next.status, this.lastWritten)) return;
    this.writing = true;
    try {
      const path = `/apis/flotilla.io/v1alpha1/fleets/${encodeURIComponent(this.name)}/status`;
      const res = await this.hub.fetch({
        method: 'PATCH',
        path,
        headers: { 'content-type': 'application/merge-patch+json', accept: 'application/json' },
        body: JSON.stringify({ status: next.status }),
      });
      if (res.status !== 200) throw new Error(`PATCH ${path}: HTTP ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
      this.lastWritten = next.status;
      this.lastFailure = undefined;
    } catch (e) {
      const msg = (e as Error).message;
      if (msg !== this.lastFailure) this.log(`flotilla: cannot write the status of Fleet/${this.name}: ${msg}`);
      this.lastFailure = msg;
    } finally {
      this.writing = false;
    }
  }

  close(): void {
    clearInterval(this.timer);
  }
}
