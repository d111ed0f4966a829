/**
 * Stored objects carry their own one-cluster global RV; a watch event's object must carry the
 * fleet-wide mark instead. The first `"resourceVersion":"` in a served object is its metadata's
 * (Kubernetes puts it before labels and annotations, and a JSON string cannot contain that
 * byte sequence unescaped), and our tokens are base64url, so the value ends at the next quote.
 */
const NEEDLE = Buffer.from('"resourceVersion":"');

export function withResourceVersion(bytes: Buffer, rv: string): Buffer {
  const at = bytes.indexOf(NEEDLE);
  if (at < 0) return bytes;
  const start = at + NEEDLE.length;
  const end = bytes.indexOf(0x22, start);
  return Buffer.concat([bytes.subarray(0, start), Buffer.from(rv), bytes.subarray(end)]);
}

export function withResourceVersionText(json: string, rv: string): string {
  const at = json.indexOf('"resourceVersion":"');
  if (at < 0) return json;
  const start = at + 19;
  const end = json.indexOf('"', start);
  return json.slice(0, start) + rv + json.slice(end);
}
