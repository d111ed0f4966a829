import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { FleetMembers, ResourceCatalog } from '../../cacher/cache-roles.js';
import { gvrKey } from '../../api/resource-info.js';
import type { LiveReadsConfig } from '../../registry/fleet-config.js';
import type { LiveReadLimits } from '../../forward/live-read-limits.js';
import { CLUSTER_PREFIXES, targetOf } from '../target.js';
import { notServed } from '../../api/status.js';
import { chooseReadHandler, type ReadHandler } from '../reads/read-handler.js';
import { liveReader } from '../reads/read-live.js';
import { liveHandler } from '../reads/live.js';
import { subresourceHandler } from '../reads/subresource.js';
import { protobufOnlyHandler } from '../reads/protobuf-only.js';
import { cachedHandler, type CachedReadDeps } from '../reads/cached.js';
import { StoreOwnerSearch } from '../../view/owner-predicate.js';
import { FIND_PATH, findHandler } from '../reads/find.js';

/**
 * Reads: get, list and watch of every resource and subresource, each served by the first of the
 * read handlers (src/router/reads/) that serves it: the members for what the cache does not hold,
 * the owning member for a subresource, the members again for a client that takes protobuf alone,
 * else the cache, through the caller's read view (src/view).
 */
export interface ReadsOptions extends CachedReadDeps {
  fleet: FleetMembers;
  catalog: ResourceCatalog;
  /** Uncached resources, read live from the members (src/forward/live/); absent: not served. */
  live?: LiveReadsConfig;
  /** What live reads may hold at once: bytes of the members' answers (each read takes a hold), watches. */
  liveLimits?: LiveReadLimits;
}

/** The read handlers in the order they are asked; the live ones only where live reads are configured. */
export function readHandlers(opts: ReadsOptions): ReadHandler[] {
  const { live } = opts;
  const readLive = live ? liveReader({ ...opts, config: live }) : undefined;
  return [
    ...(live && readLive ? [liveHandler(live, readLive)] : []),
    subresourceHandler(opts.forward),
    ...(live && readLive ? [protobufOnlyHandler(live, readLive)] : []),
    cachedHandler(opts),
  ];
}

export const readsPlugin: FastifyPluginAsync<ReadsOptions> = async (app, opts) => {
  // One owner search over the store, for cached reads and the find alike.
  const owners = opts.owners ?? new StoreOwnerSearch(opts.store, opts.catalog);
  const handlers = readHandlers({ ...opts, owners });
  // The find across kinds: a path of its own, which the resource routes below would take for an unknown group's.
  app.get(FIND_PATH, findHandler({ ...opts, owners }));

  async function read(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const target = targetOf(req.raw, opts.fleet);
    if (target.type !== 'resource') throw notServed();
    const resource = opts.catalog.resource(gvrKey(target));
    const read = { req, reply, target, ...(resource ? { resource } : {}) };
    const handler = chooseReadHandler(handlers, read);
    if (!handler) throw notServed();
    return handler.serve(read);
  }

  for (const p of CLUSTER_PREFIXES) {
    app.get(`${p}/api/:version/*`, read);
    app.get(`${p}/apis/:group/:version/*`, read);
  }
};
