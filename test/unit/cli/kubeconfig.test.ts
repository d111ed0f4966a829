import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { userKubeconfig } from '../../../src/cli/kubeconfig.js';

interface Kubeconfig {
  clusters: { name: string; cluster: Record<string, string> }[];
  users: { name: string; user: Record<string, string> }[];
  contexts: { name: string; context: { cluster: string; user: string } }[];
  'current-context': string;
}

describe('flotilla kubeconfig', () => {
  it('writes a context for the fleet and one a member through /clusters/<name>, with the user\'s token', () => {
    const k = parseYaml(userKubeconfig({ user: 'ann', server: 'https://flotilla.example:8443/', caFile: 'ca.crt', token: 's3cret', members: ['east', 'west'] })) as Kubeconfig;
    expect(k.clusters).toEqual([
      { name: 'flotilla', cluster: { server: 'https://flotilla.example:8443', 'certificate-authority': join(process.cwd(), 'ca.crt') } },
      { name: 'flotilla-east', cluster: { server: 'https://flotilla.example:8443/clusters/east', 'certificate-authority': join(process.cwd(), 'ca.crt') } },
      { name: 'flotilla-west', cluster: { server: 'https://flotilla.example:8443/clusters/west', 'certificate-authority': join(process.cwd(), 'ca.crt') } },
    ]);
    expect(k.users).toEqual([{ name: 'ann', user: { token: 's3cret' } }]);
    expect(k.contexts.map((c) => [c.name, c.context.cluster, c.context.user])).toEqual([['flotilla', 'flotilla', 'ann'], ['flotilla-east', 'flotilla-east', 'ann'], ['flotilla-west', 'flotilla-west', 'ann']]);
    expect(k['current-context']).toBe('flotilla');
  });

  it('defaults to flotilla serve\'s own address; embeds client certificates when asked', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-kubeconfig-'));
    writeFileSync(join(dir, 'ann.crt'), 'CERT');
    writeFileSync(join(dir, 'ann.key'), 'KEY');
    const k = parseYaml(userKubeconfig({ user: 'ann', clusterName: 'prod', clientCertificate: join(dir, 'ann.crt'), clientKey: join(dir, 'ann.key'), embed: true })) as Kubeconfig;
    expect(k.clusters).toEqual([{ name: 'prod', cluster: { server: 'https://127.0.0.1:8443' } }]);
    expect(k.users[0]!.user).toEqual({ 'client-certificate-data': Buffer.from('CERT').toString('base64'), 'client-key-data': Buffer.from('KEY').toString('base64') });
  });

  it.each([
    [{ token: 't', clientCertificate: 'c', clientKey: 'k' }, /not both/],
    [{ clientCertificate: 'c' }, /go together/],
    [{ server: 'http://127.0.0.1:8443' }, /HTTPS only/],
    [{ server: 'flotilla' }, /not a URL/],
    [{ members: ['East/..'] }, /not a member name/],
  ])('refuses %j', (req, message) => {
    expect(() => userKubeconfig({ user: 'ann', ...req })).toThrow(message);
  });
});
