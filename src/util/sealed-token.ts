import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Tokens a client carries but may not read: sealed (AES-256-GCM) with a key of this process's own,
 * so what they hold (a member's continue token names the member's next key, which can be anyone's)
 * is never shown, and a token altered or made elsewhere does not open. A token from another process
 * (a restart, another replica) does not open either: its reader answers as for an expired one.
 */
const KEY = randomBytes(32);
const IV_BYTES = 12;
const TAG_BYTES = 16;

export function seal(text: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', KEY, iv);
  const sealed = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
}

/** The sealed text, or undefined when the token was not sealed by this process or was altered. */
export function unseal(token: string): string | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  const bytes = Buffer.from(token, 'base64url');
  if (bytes.length < IV_BYTES + TAG_BYTES) return undefined;
  const decipher = createDecipheriv('aes-256-gcm', KEY, bytes.subarray(0, IV_BYTES));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    // The authentication tag did not match: altered, or sealed by another process.
    return undefined;
  }
}
