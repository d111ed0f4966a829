/** Whether a parsed JSON value is an object (not null, not an array): what its fields can be read from. */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
