import { Option, type Command } from 'commander';
import { connectToFlotilla, type KubeconfigFlags } from './connection.js';
import { EXIT_OK, type Io } from './io.js';
import { formatDocument, readStatus, renderClusters, renderStatus, type OutputFormat } from './status-report.js';

/**
 * `flotilla status`, `kubectl flotilla status` and `kubectl flotilla clusters`: one GET of
 * flotilla's /status through the kubeconfig, shown as a table or, with -o, as the document itself.
 */
export interface StatusFlags extends KubeconfigFlags {
  output?: OutputFormat;
}

export function addOutputOption(cmd: Command): Command {
  return cmd.addOption(new Option('-o, --output <format>', 'print the /status document itself instead of a table').choices(['json', 'yaml']));
}

export async function showStatus(flags: StatusFlags, io: Io, view: 'status' | 'clusters'): Promise<number> {
  const flotilla = await connectToFlotilla(flags);
  try {
    const body = await flotilla.getText('/status');
    const status = readStatus(body);
    if (flags.output) io.out(formatDocument(JSON.parse(body), flags.output));
    else io.out((view === 'status' ? renderStatus : renderClusters)(status, Date.now(), io.color));
    return EXIT_OK;
  } finally {
    flotilla.close();
  }
}
