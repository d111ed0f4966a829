import { describe, expect, it, vi } from 'vitest';
import { readFileSync } from 'node:fs';
import { runFlotilla, type FlotillaActions } from '../../../src/cli/flotilla.js';
import { runPlugin, type PluginActions } from '../../../src/cli/plugin.js';
import { DEFAULT_DATA_DIR, DEFAULT_LOG_LEVEL, DEFAULT_SERVE_BIND, DEFAULT_SERVE_PORT } from '../../../src/registry/defaults.js';
import { capturedIo } from './io.js';

/** What each command line asks for: the actions are spies, nothing is started or read. */
function flotillaSpies() {
  return {
    serve: vi.fn(async () => undefined),
    tenantPolicy: vi.fn(async () => 0),
    checkConfig: vi.fn(async () => 0),
    status: vi.fn(async () => 0),
  } satisfies FlotillaActions;
}

async function flotilla(args: string[]) {
  const io = capturedIo();
  const actions = flotillaSpies();
  const code = await runFlotilla(args, io, actions);
  return { code, io, actions };
}

describe('flotilla serve', () => {
  it('is what a bare `flotilla --config …` runs, with today\'s defaults, and keeps the process', async () => {
    const { code, actions } = await flotilla(['--config', 'fleet.yaml']);
    expect(code).toBeUndefined();
    expect(actions.serve).toHaveBeenCalledWith(expect.objectContaining({
      config: 'fleet.yaml', port: DEFAULT_SERVE_PORT, bind: DEFAULT_SERVE_BIND, dataDir: DEFAULT_DATA_DIR, logLevel: DEFAULT_LOG_LEVEL, applyTenantPolicy: false,
    }));
  });

  it('takes every flag of the server, `--flag=value` too; repeated list flags add up', async () => {
    const { code, actions } = await flotilla([
      'serve', '--config=f.yaml', '--port=9443', '--bind', '0.0.0.0', '--data-dir', '/var/lib/flotilla', '--log-level', 'debug',
      '--tls-cert-file', 'c.crt', '--tls-private-key-file', 'c.key', '--client-ca-file', 'ca.crt', '--apply-tenant-policy',
      '--requestheader-client-ca-file', 'front.crt', '--requestheader-allowed-names', 'front,proxy', '--requestheader-allowed-names', 'edge',
      '--requestheader-username-headers', 'X-Remote-User',
    ]);
    expect(code).toBeUndefined();
    expect(actions.serve).toHaveBeenCalledWith(expect.objectContaining({
      config: 'f.yaml', port: 9443, bind: '0.0.0.0', dataDir: '/var/lib/flotilla', logLevel: 'debug', tlsCertFile: 'c.crt', tlsPrivateKeyFile: 'c.key',
      clientCaFile: 'ca.crt', applyTenantPolicy: true, requestheaderClientCaFile: 'front.crt', requestheaderAllowedNames: ['front', 'proxy', 'edge'],
      requestheaderUsernameHeaders: ['X-Remote-User'],
    }));
  });

  it.each([
    [[], /exactly one of --config FILE or --fleet NAME/],
    [['--config', 'a', '--fleet', 'b'], /exactly one of --config FILE or --fleet NAME/],
    [['--config', 'a', '--port', '70000'], /--port <port>' argument '70000' is invalid\. not a port number/],
    [['--config', 'a', '--tls-cert-file', 'c'], /--tls-cert-file and --tls-private-key-file go together/],
    [['--fleet', 'f'], /--fleet needs the hub/],
    [['--fleet', 'f', '--hub-kubeconfig', 'k', '--hub-in-cluster'], /name the hub two ways/],
    [['--config', 'a', '--log-level', 'loud'], /Allowed choices are fatal, error, warn, info, debug, trace, silent/],
    [['--config', 'a', '--no-such-flag'], /unknown option '--no-such-flag'/],
    [['frobnicate'], /too many arguments/],
  ])('refuses %j as a usage error (exit 2), starting nothing', async (args, message) => {
    const { code, io, actions } = await flotilla(args);
    expect(code).toBe(2);
    expect(io.stderr()).toMatch(message);
    expect(actions.serve).not.toHaveBeenCalled();
  });

  it('prints its help, with every flag, exit 0', async () => {
    const { code, io } = await flotilla(['serve', '--help']);
    expect(code).toBe(0);
    for (const flag of ['--config', '--fleet', '--hub-kubeconfig', '--hub-in-cluster', '--data-dir', '--port', '--bind', '--tls-cert-file', '--log-level', '--apply-tenant-policy', '--requestheader-extra-headers-prefix']) {
      expect(io.stdout()).toContain(flag);
    }
  });
});

describe('flotilla subcommands', () => {
  it('hands tenant-policy its arguments as they are, --help included', async () => {
    const { code, actions } = await flotilla(['tenant-policy', '--config', 'f.yaml', '--tenant', 'acme', '--cluster=east']);
    expect(code).toBe(0);
    expect(actions.tenantPolicy).toHaveBeenCalledWith(['--config', 'f.yaml', '--tenant', 'acme', '--cluster=east']);
    const help = await flotilla(['tenant-policy', '--help']);
    expect(help.actions.tenantPolicy).toHaveBeenCalledWith(['--help']);
  });

  it('check-config takes one file, and its exit code is the check\'s', async () => {
    const io = capturedIo();
    const actions = { ...flotillaSpies(), checkConfig: vi.fn(async () => 1) };
    expect(await runFlotilla(['check-config', 'fleet.yaml'], io, actions)).toBe(1);
    expect(actions.checkConfig).toHaveBeenCalledWith('fleet.yaml', io);
    expect((await flotilla(['check-config'])).code).toBe(2);
  });

  it('status reads --kubeconfig, --context and -o json|yaml, nothing else', async () => {
    const { code, actions } = await flotilla(['status', '--kubeconfig', 'k', '--context', 'c', '-o', 'yaml']);
    expect(code).toBe(0);
    expect(actions.status).toHaveBeenCalledWith({ kubeconfig: 'k', context: 'c', output: 'yaml' }, expect.anything());
    expect((await flotilla(['status'])).actions.status).toHaveBeenCalledWith({}, expect.anything());
    const wrong = await flotilla(['status', '-o', 'xml']);
    expect(wrong.code).toBe(2);
    expect(wrong.io.stderr()).toMatch(/Allowed choices are json, yaml/);
  });

  it('version prints package.json\'s version and Node\'s', async () => {
    const { code, io } = await flotilla(['version']);
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(code).toBe(0);
    expect(io.stdout()).toBe(`flotilla ${pkg.version}\nnode ${process.version}\n`);
  });

  it('kubeconfig needs --user; contradicting credentials fail with a reason (exit 1)', async () => {
    expect((await flotilla(['kubeconfig'])).code).toBe(2);
    const both = await flotilla(['kubeconfig', '--user', 'ann', '--token', 't', '--client-certificate', 'c', '--client-key', 'k']);
    expect(both.code).toBe(1);
    expect(both.io.stderr()).toBe('flotilla: give --token or --client-certificate with --client-key, not both\n');
  });
});

describe('kubectl flotilla', () => {
  function pluginSpies() {
    return { clusters: vi.fn(async () => 0), status: vi.fn(async () => 0), which: vi.fn(async () => 0), find: vi.fn(async () => 0) } satisfies PluginActions;
  }

  it('reads --kubeconfig and --context before or after the command, as kubectl\'s flags go', async () => {
    for (const args of [['clusters', '--context', 'prod', '--kubeconfig', 'k'], ['--context', 'prod', '--kubeconfig', 'k', 'clusters']]) {
      const actions = pluginSpies();
      expect(await runPlugin(args, capturedIo(), actions)).toBe(0);
      expect(actions.clusters).toHaveBeenCalledWith({ context: 'prod', kubeconfig: 'k' }, expect.anything());
    }
  });

  it('which takes a resource, a name, -n or -A', async () => {
    const actions = pluginSpies();
    expect(await runPlugin(['which', 'po', 'web-0', '-n', 'shop'], capturedIo(), actions)).toBe(0);
    expect(actions.which).toHaveBeenCalledWith('po', 'web-0', { namespace: 'shop' }, expect.anything());
    expect(await runPlugin(['which', 'deploy', 'web', '-A', '--context', 'c'], capturedIo(), actions)).toBe(0);
    expect(actions.which).toHaveBeenLastCalledWith('deploy', 'web', { allNamespaces: true, context: 'c' }, expect.anything());
    expect(await runPlugin(['which', 'pods'], capturedIo(), actions)).toBe(2);
  });

  it('find takes a text, -l, --kinds, -n and -o json', async () => {
    const actions = pluginSpies();
    expect(await runPlugin(['find', 'checkout', '--kinds', 'pods,deploy', '-n', 'shop'], capturedIo(), actions)).toBe(0);
    expect(actions.find).toHaveBeenCalledWith('checkout', { kinds: 'pods,deploy', namespace: 'shop' }, expect.anything());
    expect(await runPlugin(['find', '-l', 'cluster.search.flotilla.io/env=prod', '-o', 'json'], capturedIo(), actions)).toBe(0);
    expect(actions.find).toHaveBeenLastCalledWith(undefined, { selector: 'cluster.search.flotilla.io/env=prod', output: 'json' }, expect.anything());
  });

  it('status and clusters print -o json|yaml', async () => {
    const actions = pluginSpies();
    await runPlugin(['status', '-o', 'json'], capturedIo(), actions);
    expect(actions.status).toHaveBeenCalledWith({ output: 'json' }, expect.anything());
  });
});
