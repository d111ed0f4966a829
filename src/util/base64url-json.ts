/**
 * Opaque tokens flotilla gives clients (the global resourceVersion, continue tokens): compact
 * JSON in unpadded base64url. One reader, so every token refuses what is not one alike.
 */
const BASE64URL = /^[A-Za-z0-9_-]*$/;

export function encodeBase64urlJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** The JSON object a token holds; undefined for one that is not base64url of a JSON object. */
export function decodeBase64urlJson(token: string): Record<string, unknown> | undefined {
  if (!BASE64URL.test(token)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
}
