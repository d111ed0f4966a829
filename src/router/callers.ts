import type { IncomingMessage } from 'node:http';
import type { FleetMembers } from '../cacher/cache-roles.js';
import { forbidden, unauthorized } from '../api/status.js';
import type { Authenticator } from '../auth/authenticator.js';
import { ANONYMOUS_USER, impersonationHeaders, type Identity } from '../auth/identity.js';
import { ImpersonationChecker, asksImpersonation, requestedIdentity } from '../auth/impersonation.js';
import { targetOf } from './target.js';
import { stateOf } from './request-state.js';
import type { Tenant, Tenants } from '../tenancy/tenant.js';
import { requestToMember, type FleetNames } from '../tenancy/request-names.js';

/** The configuration's tenants (hot-reloaded) and the fleet's names a tenant's request is rewritten against. */
export interface TenantDirectory {
  tenants(): Tenants;
  names(): Promise<FleetNames>;
}

/**
 * The identity a tenant's caller asks to become, in the member's names; 403 when any of it is
 * outside the tenant (another tenant's, the fleet's, `system:masters`), before any member is asked.
 */
function confinedToTenant(tenant: Tenant, wanted: Identity): Identity {
  const own = Object.keys(wanted.extra).length === 0 ? tenant.ownIdentity(wanted.user, wanted.groups) : undefined;
  if (!own) {
    throw forbidden(`users "${wanted.user}" is forbidden: tenant ${tenant.id} may impersonate only its own users, groups and service accounts`, { name: wanted.user, kind: 'users' });
  }
  return { ...wanted, ...own };
}

/**
 * Who each request acts as, decided once per request: the authenticated caller, or whom it may and
 * does impersonate (asked of the members it addresses). Reads, writes and subresources all ask here.
 */
export class Callers {
  private readonly impersonation: ImpersonationChecker;

  constructor(
    private readonly fleet: FleetMembers,
    private readonly authenticator: Authenticator | undefined,
    private readonly directory?: TenantDirectory,
  ) {
    this.impersonation = new ImpersonationChecker((name) => fleet.member(name));
  }

  /** Whether a hub's front proxy named this request's caller (identify() ran). */
  frontProxied(req: IncomingMessage): boolean {
    return this.authenticator?.frontProxied(req) ?? false;
  }

  get authenticates(): boolean {
    return this.authenticator?.enabled ?? false;
  }

  async identify(req: IncomingMessage): Promise<Identity | undefined> {
    const state = stateOf(req);
    if (state.identity !== undefined) return state.identity ?? undefined;
    // Undefined only for a caller without credentials where anonymous access is off: the
    // authentication plugin answers it 401, so every request past it has an identity.
    let id = this.authenticator ? await this.authenticator.authenticate(req) : undefined;
    // The tenant is the authenticated caller's: no header takes a tenant's caller out of it.
    let tenant = id && this.directory ? this.directory.tenants().of(id) : undefined;
    // Known before any check below can fail: its refusal, too, is worded in the tenant's names.
    if (tenant) state.decidedTenant = tenant;
    if (asksImpersonation(req.headers)) {
      if (!id) throw unauthorized('Unauthorized: impersonation (Impersonate-* headers) needs an authenticated caller');
      let wanted = requestedIdentity(req.rawHeaders);
      if (tenant) wanted = confinedToTenant(tenant, wanted);
      await this.impersonation.check(id, wanted, this.addressedClusters(req));
      id = wanted;
      // A fleet caller that becomes a tenant's identity sees that tenant's fleet.
      tenant ??= this.directory?.tenants().of(id);
    }
    if (tenant) state.decidedTenant = tenant;
    state.identity = id ?? null;
    return id;
  }

  /**
   * The tenant the caller belongs to, if any; its request's URL is then rewritten into the
   * member's names, once, before any route reads it (what it may not name is a 404 here).
   */
  async tenantOf(req: IncomingMessage): Promise<Tenant | undefined> {
    const state = stateOf(req);
    if (state.tenant !== undefined) return state.tenant ?? undefined;
    await this.identify(req);
    const tenant = state.decidedTenant;
    if (tenant) req.url = requestToMember(req.url ?? '/', req.method ?? 'GET', tenant, await this.directory!.names());
    state.tenant = tenant ?? null;
    return tenant;
  }

  /**
   * The tenant of the request's caller, once identify() has run: whose names its answers, errors
   * included, are shown in, even where the request failed before its URL was rewritten.
   */
  tenantDecided(req: IncomingMessage): Tenant | undefined {
    return stateOf(req).decidedTenant;
  }

  /** The tenant decided for this request (tenantOf ran before any route). */
  tenantSeen(req: IncomingMessage): Tenant | undefined {
    return stateOf(req).tenant ?? undefined;
  }

  /**
   * Whom a read is decided for. A request without credentials is already system:anonymous here
   * where the configuration lets those in (identify() says so); otherwise it never gets this far,
   * and nothing is decided for a caller nobody identified.
   */
  async reader(req: IncomingMessage): Promise<Identity> {
    const id = await this.identify(req);
    if (!id) throw unauthorized('Unauthorized: send a bearer token or a client certificate');
    return id;
  }

  /** The caller's Impersonate-* headers for a member; 401 when flotilla does not know the caller. */
  async headersFor(req: IncomingMessage): Promise<Record<string, string | string[]>> {
    const id = await this.identify(req);
    if (!id) {
      throw unauthorized('flotilla forwards this request to a member cluster as its caller (Impersonate-User), and does not know the caller: ' +
        (this.authenticates ? 'send a bearer token or a client certificate' : 'configure authentication in the fleet file'));
    }
    return impersonationHeaders(id);
  }

  /**
   * Whom per-caller state (read-your-writes, snapshot budgets) is kept for. Anonymous callers are
   * told apart by address: as one user, any of them could spend the budget of all the others.
   */
  key(req: IncomingMessage): string {
    const id = stateOf(req).identity;
    return id && id.user !== ANONYMOUS_USER ? `user:${id.user}` : `addr:${req.socket.remoteAddress ?? ''}`;
  }

  /** The members a request addresses: its `/clusters/<name>/`, else the whole fleet. */
  private addressedClusters(req: IncomingMessage): string[] {
    const { cluster } = targetOf(req, this.fleet);
    return cluster !== undefined ? [cluster] : this.fleet.clusterNames();
  }
}
