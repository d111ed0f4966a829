import { basename } from 'node:path';
import { ConfigError, loadFleetConfig } from '../registry/config.js';
import { authenticationProblem } from '../registry/authentication-required.js';
import { EXIT_FAILED, EXIT_OK, type Io } from './io.js';

/**
 * `flotilla check-config FILE`: the validation a start or a reload gives the fleet file (the one
 * loader), without starting anything. Every problem is printed on a line of its own, named
 * `<file>: <field path>: <what is wrong>`, and the exit code is 1; a valid file prints `ok`.
 * Whether callers can be authenticated also depends on flags (--client-ca-file, a hub): a file
 * relying on them is valid, with a warning saying so.
 */
export async function checkConfig(file: string, io: Io): Promise<number> {
  let config;
  try {
    config = await loadFleetConfig(file);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    for (const problem of e.message.split('\n').filter(Boolean)) io.err(`${problem}\n`);
    return EXIT_FAILED;
  }
  const unauthenticated = authenticationProblem(config, basename(file), { clientCertificates: false });
  if (unauthenticated) io.err(`warning: ${unauthenticated}\n`);
  io.out(`ok: ${file}: ${config.clusters.length} clusters, ${config.resources.length} resources, ${config.tenants.length} tenants\n`);
  return EXIT_OK;
}
