import { Option, type Command } from 'commander';
import { DEFAULT_SERVE_BIND, DEFAULT_SERVE_PORT } from '../registry/defaults.js';

/**
 * The options that `flotilla status` and `kubectl flotilla` share, declared where nothing heavy
 * is loaded: a command's code is imported only when it runs (`flotilla version` does not load a
 * Kubernetes client).
 */
export interface KubeconfigFlags {
  kubeconfig?: string;
  context?: string;
}

export type OutputFormat = 'json' | 'yaml';

export interface StatusFlags extends KubeconfigFlags {
  output?: OutputFormat;
}

export interface FindFlags extends KubeconfigFlags {
  selector?: string;
  kinds?: string;
  namespace?: string;
  output?: 'json';
}

export interface WhichFlags extends KubeconfigFlags {
  namespace?: string;
  allNamespaces?: boolean;
}

export function addKubeconfigOptions(cmd: Command): Command {
  return cmd
    .option('--kubeconfig <file>', 'the kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config)')
    .option('--context <name>', 'the kubeconfig context naming flotilla (default: its current context)');
}

export function addOutputOption(cmd: Command): Command {
  return cmd.addOption(new Option('-o, --output <format>', 'print the /status document itself instead of a table').choices(['json', 'yaml']));
}

/** Where `flotilla kubeconfig` points by default: `flotilla serve`'s own address. */
export const DEFAULT_SERVER = `https://${DEFAULT_SERVE_BIND}:${DEFAULT_SERVE_PORT}`;
export const DEFAULT_CLUSTER_NAME = 'flotilla';
