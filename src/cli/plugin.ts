import { newCommandLine, runCommandLine, type CommandLine } from './command-line.js';
import { processIo, type Io } from './io.js';
import { Option } from 'commander';
import { addKubeconfigOptions, addOutputOption, type FindFlags, type KubeconfigFlags, type StatusFlags, type WhichFlags } from './options.js';

/**
 * `kubectl flotilla`: kubectl runs this file as `kubectl-flotilla` when it is on PATH (npm i -g,
 * the release tarball). It reaches flotilla through kubectl's kubeconfig and context: kubectl hands
 * a plugin its arguments, not its settings, so `--kubeconfig` and `--context` are read here, and
 * $KUBECONFIG as kubectl reads it.
 */
export interface PluginActions {
  clusters(flags: StatusFlags, io: Io): Promise<number>;
  status(flags: StatusFlags, io: Io): Promise<number>;
  which(resource: string, name: string, flags: WhichFlags, io: Io): Promise<number>;
  find(text: string | undefined, flags: FindFlags, io: Io): Promise<number>;
}

// Each imported when it runs (`kubectl flotilla --help` loads no Kubernetes client).
export const PLUGIN_ACTIONS: PluginActions = {
  clusters: async (flags, io) => (await import('./status.js')).showStatus(flags, io, 'clusters'),
  status: async (flags, io) => (await import('./status.js')).showStatus(flags, io, 'status'),
  which: async (resource, name, flags, io) => (await import('./which.js')).showWhich(resource, name, flags, io),
  find: async (text, flags, io) => (await import('./find.js')).showFind(text, flags, io),
};

export function pluginCommandLine(io: Io, actions: PluginActions = PLUGIN_ACTIONS): CommandLine {
  const line = newCommandLine('kubectl flotilla', io);
  const { program, finish } = line;
  program.description('flotilla, the federated Kubernetes API, seen from kubectl (through the kubeconfig\'s current context)').addHelpText('after', `
Examples:
  kubectl flotilla clusters                    the members: health, synced, objects, last event, labels
  kubectl flotilla which deploy web -n shop    which members hold deployments.apps "web"
  kubectl flotilla find checkout               every object whose name holds "checkout", of every kind you may read
  kubectl flotilla find -l cluster.search.flotilla.io/env=prod,search.flotilla.io/created-after=2026-11-28
  kubectl flotilla status -o yaml --context flotilla
(kubectl's flags go after \`flotilla\`: kubectl hands them to the plugin)`);
  addKubeconfigOptions(program);
  // kubectl's own flags go anywhere on its command line: the kubeconfig options are the program's, read by each command.
  const kube = (): KubeconfigFlags => program.opts<KubeconfigFlags>();

  addOutputOption(program.command('clusters').description('the members: health, cachers synced, objects held, time since the last event, labels'))
    .action(async (flags: StatusFlags) => finish(await actions.clusters({ ...kube(), ...flags }, io)));

  addOutputOption(program.command('status').description('members and cachers, as `flotilla status` shows them'))
    .action(async (flags: StatusFlags) => finish(await actions.status({ ...kube(), ...flags }, io)));

  program.command('which')
    .description('which members hold an object: `which pods web-0 -n shop` (a resource\'s plural, singular or short name, or NAME.GROUP)')
    .argument('<resource>', 'the resource, as kubectl get names it')
    .argument('<name>', 'the object\'s name')
    .option('-n, --namespace <namespace>', 'its namespace (default: the context\'s, else default)')
    .option('-A, --all-namespaces', 'look in every namespace')
    .action(async (resource: string, name: string, flags: WhichFlags) => finish(await actions.which(resource, name, { ...kube(), ...flags }, io)));

  program.command('find')
    .description('objects of every cached kind you may read whose names hold TEXT (case aside); -l adds search terms (docs/search.md) and labels')
    .argument('[text]', 'what the names hold')
    .option('-l, --selector <selector>', 'a label selector, search terms included (cluster.search.flotilla.io/env=prod, search.flotilla.io/created-after=…)')
    .option('--kinds <kinds>', 'only these kinds: resources or Kinds, comma-separated (pods,deployments.apps)')
    .option('-n, --namespace <namespace>', 'only this namespace (default: every namespace)')
    .addOption(new Option('-o, --output <format>', 'print the find\'s answer itself').choices(['json']))
    .action(async (text: string | undefined, flags: FindFlags) => finish(await actions.find(text, { ...kube(), ...flags }, io)));

  return line;
}

export function runPlugin(args: readonly string[], io: Io = processIo(), actions?: PluginActions): Promise<number | undefined> {
  return runCommandLine(pluginCommandLine(io, actions), args, io);
}
