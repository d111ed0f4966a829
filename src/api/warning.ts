/**
 * flotilla's own `Warning` header values (RFC 9111 code 299, as the apiserver writes its
 * warnings), so that every answer words them alike.
 */
export function warningHeader(text: string): string {
  // A header holds Latin-1 only (Node refuses more, and the answer would be a 500): what else the
  // text names (a path segment's `．．`, a member's words) is percent-encoded.
  return `299 - ${JSON.stringify(`flotilla: ${text}`).replace(/[^\x20-\x7e]/gu, (c) => encodeURIComponent(c))}`;
}

/**
 * A get of a name several members hold answers the first copy in the fleet's order: the Warning
 * names them all (the first one served) and how to read another's. `clusters` come in that order.
 */
export function firstHitWarning(subject: string, clusters: readonly string[]): string {
  return warningHeader(`${subject} is in clusters ${clusters.join(', ')}; this is ${clusters[0]}'s (the first in the fleet's order); read another's with the /clusters/<name>/ path prefix`);
}
