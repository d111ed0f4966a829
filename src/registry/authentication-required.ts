import type { FleetConfig } from './fleet-config.js';

/**
 * Flotilla refuses to run with no way to tell who calls it: such a flotilla could only serve every
 * cached object of every member to whoever reaches its port. Anonymous access must be asked for by
 * name (`authentication.anonymous: true`), never be what a forgotten section amounts to. Checked at
 * start and on every reload of the fleet file.
 */
export interface CallerCredentials {
  /** `--client-ca-file` was given: client certificates authenticate callers. */
  clientCertificates: boolean;
  /** A hub was given (`--hub-kubeconfig`): it reviews bearer tokens, and its front proxy names callers. */
  hub?: boolean;
}

/** Why `config` leaves callers unauthenticated, naming the fix; undefined when it does not. */
export function authenticationProblem(config: FleetConfig, file: string, flags: CallerCredentials): string | undefined {
  const auth = config.authentication;
  if (auth.tokenReviewCluster !== undefined || auth.tokenFile !== undefined || flags.clientCertificates || flags.hub === true || auth.anonymous) return undefined;
  return (
    `${file}: authentication: flotilla has no way to authenticate callers. Set authentication.tokenReviewCluster ` +
    '(a member cluster that reviews bearer tokens) or authentication.tokenFile (a static token file) in the fleet file, ' +
    'or start flotilla with --client-ca-file (client certificates) or --hub-kubeconfig (a hub reviews tokens); or, to serve callers without credentials as ' +
    'system:anonymous, set authentication.anonymous: true'
  );
}
