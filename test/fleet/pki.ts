import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Certificates for a test fleet, made with the openssl CLI: one CA for the whole fleet, a serving
 * certificate for loopback (shared by every apiserver and kwok), a client certificate the apiservers
 * present to kwok's kubelet API, and the service-account signing key pair.
 */
export interface FleetPki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  kubeletClientCert: string;
  kubeletClientKey: string;
  saKey: string;
  saPub: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

export function makeFleetPki(dir: string): FleetPki {
  const p = (f: string) => join(dir, f);
  const pki: FleetPki = {
    caCert: p('ca.crt'),
    caKey: p('ca.key'),
    servingCert: p('serving.crt'),
    servingKey: p('serving.key'),
    kubeletClientCert: p('kubelet-client.crt'),
    kubeletClientKey: p('kubelet-client.key'),
    saKey: p('sa.key'),
    saPub: p('sa.pub'),
  };
  if (existsSync(pki.saPub)) return pki;

  makeCA(dir, 'ca', '/CN=flotilla-test-fleet-ca');
  issue(dir, 'serving', '/CN=flotilla-test-member', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  issue(dir, 'kubelet-client', '/O=system:masters/CN=kube-apiserver-kubelet-client', 'extendedKeyUsage=clientAuth\n');
  openssl(['genrsa', '-out', 'sa.key', '2048'], dir);
  openssl(['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
  return pki;
}

/** A self-signed CA `<dir>/<name>.crt` (and `.key`); returns the two paths. */
export function makeCA(dir: string, name: string, subject: string): { cert: string; key: string } {
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '3650', '-subj', subject], dir);
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

function issue(dir: string, name: string, subject: string, extensions: string, ca = { cert: 'ca.crt', key: 'ca.key' }): void {
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject], dir);
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', `${name}.crt`, '-days', '3650', '-extfile', `${name}.ext`], dir);
}

/**
 * A client certificate `<dir>/<name>.crt` (and `.key`) from `ca` (the fleet's, or a front proxy's),
 * for a process beside the fleet (a control plane's front-proxy client); returns the two paths.
 */
export function issueClientCert(ca: { cert: string; key: string }, dir: string, name: string, subject: string): { cert: string; key: string } {
  issue(dir, name, subject, 'extendedKeyUsage=clientAuth\n', ca);
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}
