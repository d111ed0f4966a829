import type { FleetMembers, ResourceCatalog } from '../cacher/cache-roles.js';
import { memberDiscovery, memberStorageVersionHashes, type DiscoveryDocuments } from '../resources/discovery.js';
import { FLEET_DISCOVERY_TIMEOUT_MS, FLEET_DISCOVERY_TTL_MS } from '../registry/defaults.js';
import { fleetDocuments, type FleetDocuments } from './union.js';

/**
 * The members' discovery, kept per member: learned on first use and after a configuration reload
 * (a changed member list) before answering, then refreshed in the background when older than
 * `ttlMs`, so a CRD added on a member shows within seconds. A member that does not answer keeps
 * its last known discovery; one never heard from adds nothing.
 */
export class FleetDiscovery {
  private readonly known = new Map<string, DiscoveryDocuments>();
  /** Per group-version (`group/version`), the storage version hashes the members agree on, and when. */
  private readonly hashes = new Map<string, { at: number; hashes: Promise<ReadonlyMap<string, string>> }>();
  private fleetKey: string | undefined;
  private at = 0;
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly fleet: FleetMembers,
    private readonly catalog: ResourceCatalog,
    /** Which uncached resources flotilla reads live (absent: every one). */
    private readonly readable: ((group: string, resource: string) => boolean) | undefined,
    private readonly ttlMs = FLEET_DISCOVERY_TTL_MS,
    private readonly timeoutMs = FLEET_DISCOVERY_TIMEOUT_MS,
  ) {}

  async documents(): Promise<FleetDocuments> {
    const names = this.fleet.clusterNames();
    const key = names.join('\n');
    if (key !== this.fleetKey) await this.refresh(key);
    else if (Date.now() - this.at > this.ttlMs) void this.refresh(key);
    const members = names.flatMap((n) => this.known.get(n) ?? []);
    return fleetDocuments(members, this.catalog.cachedResources(), this.readable);
  }

  /**
   * Each resource's storageVersionHash in a group-version's legacy document: the members' own
   * (asked of each, kept as long as the fleet's documents), where every member that gives one
   * gives the same. Members that store a kind in different versions disagree, and the resource
   * then has none: a storage version migrator reads the members themselves.
   */
  storageVersionHashes(group: string, version: string): Promise<ReadonlyMap<string, string>> {
    const key = `${group}/${version}`;
    const known = this.hashes.get(key);
    if (known && Date.now() - known.at <= this.ttlMs) return known.hashes;
    const asked = this.agreedHashes(group, version);
    if (!known) {
      this.hashes.set(key, { at: Date.now(), hashes: asked });
      return asked;
    }
    // Stale: answered from what was known while the members are asked again, as documents() does.
    known.at = Date.now();
    void asked.then((hashes) => this.hashes.set(key, { at: Date.now(), hashes: Promise.resolve(hashes) }));
    return known.hashes;
  }

  private async agreedHashes(group: string, version: string): Promise<ReadonlyMap<string, string>> {
    const perMember = await Promise.all(this.fleet.clusterNames().map(async (name) => {
      const member = this.fleet.member(name);
      return member ? memberStorageVersionHashes(member, group, version, AbortSignal.timeout(this.timeoutMs)).catch(() => undefined) : undefined;
    }));
    const agreed = new Map<string, string>();
    const disagreed = new Set<string>();
    for (const answer of perMember) {
      for (const [resource, hash] of answer ?? []) {
        const prior = agreed.get(resource);
        if (prior !== undefined && prior !== hash) disagreed.add(resource);
        agreed.set(resource, hash);
      }
    }
    for (const resource of disagreed) agreed.delete(resource);
    return agreed;
  }

  private refresh(key: string): Promise<void> {
    this.refreshing ??= (async () => {
      const names = this.fleet.clusterNames();
      await Promise.all(names.map(async (name) => {
        const member = this.fleet.member(name);
        if (!member) return;
        try {
          this.known.set(name, await memberDiscovery(member, AbortSignal.timeout(this.timeoutMs)));
        } catch {
          // keeps what it knew
        }
      }));
      for (const name of [...this.known.keys()]) if (!names.includes(name)) this.known.delete(name);
      this.fleetKey = key;
      this.at = Date.now();
    })().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }
}
