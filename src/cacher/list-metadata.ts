/**
 * A member's list page's own metadata read without parsing the page: it is the top-level
 * `metadata`, which comes first and holds only strings and numbers, so its text ends at the first
 * `}` after it.
 */
function listMetadataText(body: Buffer): string | undefined {
  const start = body.indexOf('"metadata":{');
  if (start < 0) return undefined;
  const end = body.indexOf('}', start);
  return body.toString('utf8', start, end < 0 ? Math.min(body.length, start + 8192) : end);
}

/** The page's continue token: the next page to ask for. */
export function peekContinue(body: Buffer): string | undefined {
  const m = /"continue":"([^"]*)"/.exec(listMetadataText(body) ?? '');
  return m?.[1] || undefined;
}

/** The member's count of the objects left after this page, when it gives one. */
export function peekRemainingItemCount(body: Buffer): number | undefined {
  const m = /"remainingItemCount":(\d+)/.exec(listMetadataText(body) ?? '');
  return m ? Number(m[1]) : undefined;
}
