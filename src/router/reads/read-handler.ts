import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CachedResource } from '../../cacher/cache-roles.js';
import type { ResourceTarget } from '../../forward/owner.js';

/**
 * One way of serving a read (get, list or watch of a resource or its subresource). The reads
 * plugin asks its handlers in order and the first that serves a read serves it; a read none serves
 * is 404. A handler decides from the path, the catalog's entry and the headers, never by reading
 * the request's options (that is the serving handler's to do, and to refuse).
 */
export interface ReadHandler {
  /** What it is called in tests and logs. */
  readonly name: string;
  serves(read: ReadContext): boolean;
  serve(read: ReadContext): Promise<FastifyReply>;
}

/** A read as the handlers see it: the path already read, the resource as the cache holds it. */
export interface ReadContext {
  req: FastifyRequest;
  reply: FastifyReply;
  target: ResourceTarget;
  /** The catalog's entry; undefined for a resource flotilla does not cache. */
  resource?: CachedResource;
}

/** The first of the handlers that serves the read, in their order. */
export function chooseReadHandler(handlers: readonly ReadHandler[], read: ReadContext): ReadHandler | undefined {
  return handlers.find((h) => h.serves(read));
}

/**
 * A cached resource addressed in a scope it has: a namespace given for a cluster-scoped resource
 * names nothing, and no handler past the live one serves it.
 */
export function cachedScope({ target, resource }: ReadContext): boolean {
  return resource !== undefined && (target.namespace === undefined || resource.info.namespaced);
}
