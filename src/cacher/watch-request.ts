import type { IncomingMessage } from 'node:http';
import type { MemberClient } from '../members/member-client.js';
import { MEMBER_WATCH_IDLE_GRACE_SECONDS } from '../registry/defaults.js';
import { TABLE_ACCEPT } from './paged-list.js';

/**
 * A cacher's watch of its member: from an RV, with bookmarks, Table rows with their objects, and
 * a server-side timeout picked at random up to the configured bound (so a fleet's watches do not
 * all end at once), on a connection of its own. Answers the member's stream, or throws what its
 * refusal means.
 */

/** The member no longer holds the RV asked from (410): the cacher lists again. */
export class GoneError extends Error {}

export interface WatchRequest {
  member: MemberClient;
  /** The collection's path, without a query. */
  path: string;
  rv: string;
  /** Upper bound of the watch's server-side timeout; the watch picks a random share of it. */
  maxTimeoutSeconds: number;
  signal: AbortSignal;
  /** What a refusal (neither 200 nor 410) throws. */
  refusal(status: number, body: string): Error;
}

export async function openWatch(req: WatchRequest): Promise<IncomingMessage> {
  const maxTimeout = req.maxTimeoutSeconds;
  const timeoutSeconds = Math.floor(maxTimeout / 2 + Math.random() * (maxTimeout / 2));
  const q = new URLSearchParams({
    watch: '1',
    allowWatchBookmarks: 'true',
    resourceVersion: req.rv,
    timeoutSeconds: String(timeoutSeconds),
    includeObject: 'Object',
  });
  const res: IncomingMessage = await req.member.send({
    path: `${req.path}?${q}`,
    headers: { accept: TABLE_ACCEPT },
    signal: req.signal,
    idleTimeoutMs: (timeoutSeconds + MEMBER_WATCH_IDLE_GRACE_SECONDS) * 1000,
    lane: 'long-running',
  });
  if (res.statusCode === 410) {
    res.resume();
    throw new GoneError('watch RV expired');
  }
  if (res.statusCode !== 200) {
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    throw req.refusal(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8', 0, 2000));
  }
  return res;
}
