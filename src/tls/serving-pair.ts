import { X509Certificate, createPrivateKey } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { generate } from 'selfsigned';

/**
 * The serving pair flotilla uses when it is given none: a self-signed certificate made at first
 * start and kept (`serving.crt`, `serving.key`) in a directory of the data dir, so it survives
 * restarts and a kubeconfig can trust it (`certificate-authority: …/serving.crt`). It is made again
 * only when it cannot serve: unreadable, key and certificate not a pair, near its end, or missing a
 * name the server is reached by (a new `--bind`).
 */
export interface ServingPair {
  cert: Buffer;
  key: Buffer;
  certFile: string;
  keyFile: string;
  /** Why it was made now (first start, or what the kept one lacked); undefined: kept from before. */
  made?: string;
}

const VALID_DAYS = 365;
/** A kept certificate with less than this left is replaced at start, so it never runs out while serving. */
const RENEW_BEFORE_DAYS = 30;
const DAY_MS = 24 * 3600 * 1000;

/** The names a client may reach a server bound to `bind` by: loopback always, and the bind address. */
export function servingNames(bind: string): string[] {
  const names = ['localhost', '127.0.0.1', '::1'];
  // A wildcard address is never what a client dials: the machine's name is.
  const reached = bind === '0.0.0.0' || bind === '::' ? hostname() : bind;
  if (reached && !names.includes(reached)) names.push(reached);
  return names;
}

export async function selfSignedServingPair(dir: string, names: string[], now = new Date()): Promise<ServingPair> {
  // Absolute: the path is printed for kubeconfigs, which read it from wherever they are.
  const certFile = resolve(dir, 'serving.crt');
  const keyFile = resolve(dir, 'serving.key');
  const lacking = existsSync(certFile) || existsSync(keyFile) ? problemOf(certFile, keyFile, names, now) : 'first start';
  if (lacking === undefined) {
    // Ours alone: a key copied in or restored from a backup with wider rights is narrowed again.
    chmodSync(keyFile, 0o600);
    return { cert: readFileSync(certFile), key: readFileSync(keyFile), certFile, keyFile };
  }
  const pems = await generate([{ name: 'commonName', value: 'flotilla' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    // An hour back, as client-go's self-signed pairs do: a client whose clock is a little behind still accepts it.
    notBeforeDate: new Date(now.getTime() - 3600 * 1000),
    notAfterDate: new Date(now.getTime() + VALID_DAYS * DAY_MS),
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: names.map((n) => (isIP(n) ? { type: 7 as const, ip: n } : { type: 2 as const, value: n })) },
    ],
  });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeAtomically(keyFile, pems.private, 0o600);
  writeAtomically(certFile, pems.cert, 0o644);
  return { cert: Buffer.from(pems.cert), key: Buffer.from(pems.private), certFile, keyFile, made: lacking };
}

/** What keeps a kept pair from serving `names` from `now` on; undefined when it serves. */
function problemOf(certFile: string, keyFile: string, names: string[], now: Date): string | undefined {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(readFileSync(certFile));
    if (!cert.checkPrivateKey(createPrivateKey(readFileSync(keyFile)))) return `${keyFile} is not the key of ${certFile}`;
  } catch (e) {
    return `the kept pair cannot be read (${(e as Error).message})`;
  }
  const left = (Date.parse(cert.validTo) - now.getTime()) / DAY_MS;
  if (left < RENEW_BEFORE_DAYS) return left < 0 ? 'the kept certificate has expired' : `the kept certificate ends in ${Math.floor(left)} days`;
  // Names are checked against the subjectAltName only: clients ignore a certificate's CN.
  const missing = names.filter((n) => (isIP(n) ? cert.checkIP(n) === undefined : cert.checkHost(n, { subject: 'never' }) === undefined));
  if (missing.length) return `the kept certificate does not name ${missing.join(', ')}`;
  return undefined;
}

/** Written beside and renamed: a crash mid-write never leaves half a key, and the mode is set before any byte is. */
function writeAtomically(file: string, text: string, mode: number): void {
  const tmp = `${file}.tmp`;
  rmSync(tmp, { force: true });
  writeFileSync(tmp, text, { mode, flag: 'wx' });
  renameSync(tmp, file);
}
