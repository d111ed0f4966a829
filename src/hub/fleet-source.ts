import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CacheHealth } from '../cacher/cache-roles.js';
import { emptyFreshReadCounts } from '../cacher/fresh-reads.js';
import type { MemberClient } from '../members/member-client.js';
import { ConfigError } from '../registry/config.js';
import type { FleetConfig } from '../registry/fleet-config.js';
import type { ConfigSource, ConfigWatchHandlers } from '../registry/watch.js';
import { isJsonObject } from '../util/json-object.js';
import { fleetConfigFromSpec, fleetSource, secretRefs, type CredentialKind, type FleetFromSpec, type SecretRef, type SecretValue } from './fleet-spec.js';
import { FleetStatusWriter, type FleetOutcome, type FleetStatus } from './fleet-status.js';
import { HubWatch, type HubObject } from './hub-watch.js';
import { FLEET_RELOAD_DEBOUNCE_MS } from '../registry/defaults.js';

/**
 * The fleet configuration read from a Fleet object (`flotilla.io/v1alpha1`, cluster-scoped) on a
 * hub cluster and watched there, with the Secrets its members' credentials are in: a ConfigSource
 * like the file, whose changes go through the same handlers (validated by the same code, refused
 * the same way, the running configuration kept when a change is refused). What became of each
 * change is written back to the object's status (FleetStatusWriter).
 *
 * The Fleet must exist and be valid when flotilla starts (`open` throws a ConfigError otherwise,
 * as an invalid file does); deleting it later keeps the running configuration.
 */
export interface FleetSourceOptions {
  hub: MemberClient;
  /** The Fleet object's name. */
  name: string;
  /** Credentials from Secrets are kept in `<dataDir>/hub/` (mode 0600), one file per value. */
  dataDir: string;
  log?: (line: string) => void;
  debounceMs?: number;
  statusIntervalMs?: number;
}

export const FLEETS_PATH = '/apis/flotilla.io/v1alpha1/fleets';

const EXTENSIONS: Record<CredentialKind, string> = { kubeconfig: 'kubeconfig', ca: 'ca.crt', token: 'token' };

export class FleetSource implements ConfigSource {
  readonly name: string;
  private readonly fleetWatch: HubWatch;
  private readonly secretWatches = new Map<string, HubWatch>();
  private readonly credentialsDir: string;
  private readonly log: (line: string) => void;
  private handlers?: ConfigWatchHandlers;
  /** The running configuration, as JSON: a change that leads to it again applies nothing. */
  private baseline?: string;
  /** The spec and Secret versions last evaluated: a status write or an unrelated Secret changes none. */
  private lastInputs?: string;
  private outcome?: FleetOutcome;
  private timer?: NodeJS.Timeout;
  private running: Promise<void> = Promise.resolve();
  private status?: FleetStatusWriter;
  private closed = false;

  private constructor(private readonly opts: FleetSourceOptions) {
    this.name = fleetSource(opts.name);
    this.log = opts.log ?? ((l) => console.log(l));
    this.credentialsDir = join(opts.dataDir, 'hub');
    this.fleetWatch = new HubWatch(opts.hub, FLEETS_PATH, { fieldSelector: `metadata.name=${opts.name}` }, () => this.schedule(), (e) => this.log(`flotilla: ${this.name}: reading it from the hub: ${e} (retrying)`));
  }

  /** Reads the Fleet and its Secrets once: the configuration to start with, or a ConfigError saying why there is none. */
  static async open(opts: FleetSourceOptions): Promise<{ source: FleetSource; config: FleetConfig }> {
    const source = new FleetSource(opts);
    try {
      await source.fleetWatch.whenAttempted();
      if (!source.fleetWatch.listed) throw new ConfigError(`${source.name}: cannot read it from the hub: ${source.fleetWatch.error}`);
      const fleet = source.fleet();
      if (!fleet) throw new ConfigError(`${source.name}: no such object on the hub (kubectl get fleets.flotilla.io)`);
      await source.watchSecrets(fleet.spec);
      let result: FleetFromSpec;
      try {
        result = source.evaluate(fleet);
      } catch (e) {
        if (e instanceof ConfigError) {
          source.outcome = { ...(source.outcome ?? { members: [], memberErrors: new Map() }), generation: fleet.metadata.generation, rejected: e.message };
          await source.writeStatusOnce();
        }
        throw e;
      }
      source.baseline = JSON.stringify(result.config);
      source.lastInputs = source.inputsKey(fleet);
      source.accept(fleet, result);
      return { source, config: result.config };
    } catch (e) {
      source.close();
      throw e;
    }
  }

  watch(handlers: ConfigWatchHandlers): { close(): void } {
    this.handlers = handlers;
    this.schedule();
    return { close: () => this.close() };
  }

  /** Starts writing the Fleet's status from the running flotilla's health. */
  reportStatus(health: CacheHealth): void {
    this.status?.close();
    this.status = new FleetStatusWriter(this.opts.hub, this.opts.name, () => this.statusInputs(), health, this.log, this.opts.statusIntervalMs);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.status?.close();
    this.fleetWatch.close();
    for (const w of this.secretWatches.values()) w.close();
  }

  private fleet(): (HubObject & { spec?: unknown; status?: Partial<FleetStatus> }) | undefined {
    return this.fleetWatch.objects.get(this.opts.name);
  }

  private statusInputs(): { outcome: FleetOutcome; current?: Partial<FleetStatus> } | undefined {
    const fleet = this.fleet();
    if (!fleet || !this.outcome) return undefined;
    return { outcome: this.outcome, ...(isJsonObject(fleet.status) ? { current: fleet.status } : {}) };
  }

  private schedule(): void {
    if (!this.handlers || this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.running = this.running.then(() => this.reload()).catch((e: unknown) => this.handlers?.onError(`${this.name}: ${String(e)}`));
    }, this.opts.debounceMs ?? FLEET_RELOAD_DEBOUNCE_MS);
  }

  private async reload(): Promise<void> {
    const handlers = this.handlers;
    if (!handlers || this.closed || !this.fleetWatch.listed) return;
    const fleet = this.fleet();
    if (!fleet) {
      if (this.lastInputs !== undefined) handlers.onError(`${this.name}: deleted from the hub; the running configuration is kept`);
      this.lastInputs = undefined;
      if (this.outcome) this.outcome = { ...this.outcome, rejected: `${this.name}: deleted from the hub; the running configuration is kept` };
      return;
    }
    await this.watchSecrets(fleet.spec);
    const key = this.inputsKey(fleet);
    if (key === this.lastInputs) return;
    this.lastInputs = key;
    let result: FleetFromSpec;
    try {
      result = this.evaluate(fleet);
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      this.reject(fleet, e.message);
      return;
    }
    const refused = handlers.refuse?.(result.config);
    if (refused !== undefined) {
      this.reject(fleet, refused);
      return;
    }
    const json = JSON.stringify(result.config);
    if (json !== this.baseline) {
      await handlers.onConfig(result.config);
      this.baseline = json;
    }
    this.accept(fleet, result);
  }

  private reject(fleet: HubObject, message: string): void {
    this.handlers?.onError(message);
    this.outcome = { ...(this.outcome ?? { members: [], memberErrors: new Map() }), generation: fleet.metadata.generation, rejected: message };
  }

  private accept(fleet: HubObject & { spec?: unknown }, result: FleetFromSpec): void {
    const spec = fleet.spec as { clusters?: { name?: unknown }[] };
    const members = (spec.clusters ?? []).map((c) => String(c.name));
    this.outcome = { generation: fleet.metadata.generation, members, memberErrors: result.memberErrors };
    for (const [cluster, error] of result.memberErrors) this.log(`flotilla: ${this.name}: member ${cluster} left out: ${error}`);
    this.removeUnusedCredentials(result.config);
  }

  private evaluate(fleet: HubObject & { spec?: unknown }): FleetFromSpec {
    return fleetConfigFromSpec(fleet.spec ?? {}, {
      name: this.opts.name,
      secret: (ref) => this.secret(ref),
      store: (cluster, kind, value) => this.storeCredential(cluster, kind, value),
    });
  }

  /** The spec and the versions of the Secrets it references, as one string. */
  private inputsKey(fleet: HubObject & { spec?: unknown }): string {
    const secrets = secretRefs(fleet.spec).map((r) => {
      const w = this.secretWatches.get(r.namespace);
      return [r.namespace, r.name, w?.objects.get(r.name)?.metadata.resourceVersion ?? w?.error ?? null];
    });
    return JSON.stringify([fleet.spec ?? null, secrets]);
  }

  /** Watches the namespaces whose Secrets the spec references (and no others); waits for the new ones' first list. */
  private async watchSecrets(spec: unknown): Promise<void> {
    const namespaces = new Set(secretRefs(spec).map((r) => r.namespace));
    for (const [ns, w] of this.secretWatches) {
      if (!namespaces.has(ns)) {
        w.close();
        this.secretWatches.delete(ns);
      }
    }
    const fresh: HubWatch[] = [];
    for (const ns of namespaces) {
      if (this.secretWatches.has(ns)) continue;
      const w = new HubWatch(this.opts.hub, `/api/v1/namespaces/${encodeURIComponent(ns)}/secrets`, {}, () => this.schedule(), (e) => this.log(`flotilla: ${this.name}: reading Secrets in namespace ${ns} from the hub: ${e} (retrying)`));
      this.secretWatches.set(ns, w);
      fresh.push(w);
    }
    await Promise.all(fresh.map((w) => w.whenAttempted()));
  }

  private secret(ref: SecretRef): SecretValue {
    const w = this.secretWatches.get(ref.namespace);
    if (!w?.listed) return { error: `cannot read Secrets in namespace ${ref.namespace}: ${w?.error ?? 'not listed yet'}` };
    const secret = w.objects.get(ref.name) as (HubObject & { data?: Record<string, string> }) | undefined;
    if (!secret) return { error: `Secret ${ref.namespace}/${ref.name} not found` };
    const data = secret.data?.[ref.key];
    if (data === undefined) return { error: `Secret ${ref.namespace}/${ref.name} has no key ${JSON.stringify(ref.key)}` };
    return { value: Buffer.from(data, 'base64') };
  }

  /** A file per credential value, named by its content: a rotated value is a new path, so a new connection. */
  private storeCredential(cluster: string, kind: CredentialKind, value: Buffer): string {
    mkdirSync(this.credentialsDir, { recursive: true, mode: 0o700 });
    const digest = createHash('sha256').update(value).digest('hex').slice(0, 16);
    const file = join(this.credentialsDir, `${cluster}-${digest}.${EXTENSIONS[kind]}`);
    try {
      writeFileSync(file, value, { mode: 0o600, flag: 'wx' });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    return file;
  }

  private removeUnusedCredentials(config: FleetConfig): void {
    const used = new Set(config.clusters.flatMap((c) => [c.kubeconfig, c.caFile, c.tokenFile]));
    let names: string[];
    try {
      names = readdirSync(this.credentialsDir);
    } catch {
      return;
    }
    for (const n of names) {
      const file = join(this.credentialsDir, n);
      if (!used.has(file)) rmSync(file, { force: true });
    }
  }

  /** At start, when the Fleet is refused: its status says why before the process exits. */
  private async writeStatusOnce(): Promise<void> {
    const none: CacheHealth = { isSynced: () => false, status: () => [], staleClusters: () => [], heartbeats: () => [], reachResourceVersion: () => Promise.resolve(false), memberQuietBetween: () => Promise.resolve('unknown'), confirmFresh: () => Promise.resolve([]), freshReadStats: emptyFreshReadCounts };
    // Written once, then closed: its interval never comes round.
    const writer = new FleetStatusWriter(this.opts.hub, this.opts.name, () => this.statusInputs(), none, this.log);
    await writer.tick();
    writer.close();
  }
}
