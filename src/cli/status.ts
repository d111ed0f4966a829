import { connectToFlotilla } from './connection.js';
import { EXIT_OK, type Io } from './io.js';
import type { StatusFlags } from './options.js';
import { formatDocument, readStatus, renderClusters, renderStatus } from './status-report.js';

/**
 * `flotilla status`, `kubectl flotilla status` and `kubectl flotilla clusters`: one GET of
 * flotilla's /status through the kubeconfig, shown as a table or, with -o, as the document itself.
 */
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
