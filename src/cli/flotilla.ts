import type { Command } from 'commander';
import { newCommandLine, runCommandLine, type CommandLine } from './command-line.js';
import { EXIT_OK, EXIT_USAGE, processIo, type Io } from './io.js';
import type { KubeconfigRequest } from './kubeconfig.js';
import { addKubeconfigOptions, addOutputOption, DEFAULT_CLUSTER_NAME, DEFAULT_SERVER, type StatusFlags } from './options.js';
import { addServeOptions, serveFlagsProblem, type ServeFlags } from './serve-flags.js';
import { versionText } from './version.js';

/**
 * The `flotilla` command: `serve` (the default: a bare `flotilla --config …` serves), `check-config`,
 * `status`, `kubeconfig`, `version` and `tenant-policy`. Parsed by commander; each command's work
 * is a function of its own, given here as `actions` so tests can see what a command line asks for,
 * and imported only when it runs: the server and the Kubernetes client take seconds to load.
 */
export interface FlotillaActions {
  /** Resolves with an exit code when flotilla cannot start, undefined once it serves. */
  serve(flags: ServeFlags): Promise<number | undefined>;
  tenantPolicy(args: string[]): Promise<number>;
  checkConfig(file: string, io: Io): Promise<number>;
  status(flags: StatusFlags, io: Io): Promise<number>;
}

export const FLOTILLA_ACTIONS: FlotillaActions = {
  serve: async (flags) => (await import('./serve.js')).serve(flags),
  tenantPolicy: async (args) => (await import('../tenant-policy.js')).runTenantPolicy(args),
  checkConfig: async (file, io) => (await import('./check-config.js')).checkConfig(file, io),
  status: async (flags, io) => (await import('./status.js')).showStatus(flags, io, 'status'),
};

export function flotillaCommandLine(io: Io, actions: FlotillaActions = FLOTILLA_ACTIONS): CommandLine {
  const line = newCommandLine('flotilla', io);
  const { program, finish } = line;
  program.description('A federated caching proxy: many Kubernetes clusters as one Kubernetes API.').addHelpText('after', `
Examples:
  flotilla --config fleet.yaml                 serve the fleet file's members (as \`flotilla serve\`)
  flotilla check-config fleet.yaml             validate it as a reload would
  flotilla status --context flotilla           what a running flotilla holds, member by member
  flotilla kubeconfig --user ann --token T --ca-file ca.crt --members east,west
(docs/cli.md has them all)`);

  addServeOptions(program.command('serve', { isDefault: true }).description('serve the fleet (the default: `flotilla --config FLEET.yaml` serves)'))
    .action(async (flags: ServeFlags, cmd: Command) => {
      const problem = serveFlagsProblem(flags);
      if (problem) cmd.error(`error: ${problem}`, { exitCode: EXIT_USAGE });
      finish(await actions.serve(flags));
    });

  program.command('check-config')
    .description('validate a fleet file as a start or a reload does: "ok", or each problem with its field path (exit 1)')
    .argument('<file>', 'the fleet file')
    .action(async (file: string) => finish(await actions.checkConfig(file, io)));

  addOutputOption(addKubeconfigOptions(program.command('status')
    .description('a running flotilla\'s members and cachers, read from its /status through a kubeconfig')))
    .action(async (flags: StatusFlags) => finish(await actions.status(flags, io)));

  program.command('kubeconfig')
    .description('print a kubeconfig for a user of flotilla (one context for the fleet, one per --members member)')
    .requiredOption('--user <name>', 'the user\'s name in the kubeconfig')
    .option('--server <url>', `flotilla's URL (default: ${DEFAULT_SERVER})`)
    .option('--ca-file <file>', 'the CA that signed flotilla\'s serving certificate')
    .option('--token <token>', 'the user\'s bearer token')
    .option('--client-certificate <file>', 'the user\'s client certificate (with --client-key)')
    .option('--client-key <file>', 'its private key')
    .option('--cluster-name <name>', `the name of the cluster and context (default: ${DEFAULT_CLUSTER_NAME})`)
    .option('--members <names>', 'members to add a context each for, through flotilla\'s /clusters/<name> (comma-separated)', (v: string) => v.split(',').map((m) => m.trim()).filter(Boolean))
    .option('--embed-certs', 'put the files\' contents in the kubeconfig instead of their paths', false)
    .action(async (flags: KubeconfigRequest & { embedCerts: boolean }) => {
      const { userKubeconfig } = await import('./kubeconfig.js');
      io.out(userKubeconfig({ ...flags, embed: flags.embedCerts }));
      finish(EXIT_OK);
    });

  program.command('version')
    .description('print flotilla\'s version and Node\'s')
    .action(() => {
      io.out(versionText());
      finish(EXIT_OK);
    });

  // Its own flags and help (src/tenant-policy.ts): everything after the word is handed over as it is.
  program.command('tenant-policy')
    .description('print each tenant\'s member-side policy as YAML for kubectl apply (flotilla tenant-policy --help)')
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]')
    .action(async (_args: string[], _flags: unknown, cmd: Command) => finish(await actions.tenantPolicy(cmd.args)));

  return line;
}

/** The `flotilla` binary's entry (src/main.ts). */
export function runFlotilla(args: readonly string[], io: Io = processIo(), actions?: FlotillaActions): Promise<number | undefined> {
  return runCommandLine(flotillaCommandLine(io, actions), args, io);
}
