import { describe, expect, inject, it } from 'vitest';
import { resolve } from 'node:path';
import { kubectl } from '../support/kubectl.js';

/** The manifests under deploy/ are accepted by a real apiserver. */
const fleet = inject('fleet');
const deploy = resolve(import.meta.dirname, '..', '..', 'deploy');

describe('deploy/', () => {
  it('has a CRD for hub-cluster configuration that an apiserver accepts', async () => {
    const r = await kubectl(fleet.members[0]!.kubeconfig, ['apply', '--dry-run=server', '-f', resolve(deploy, 'crds', 'fleets.flotilla.io.yaml')]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('customresourcedefinition.apiextensions.k8s.io/fleets.flotilla.io created (server dry run)');
  });

  it('has manifests that validate against the apiserver’s schema', async () => {
    // Server-side dry-run needs the namespace to exist; validate each object's schema instead.
    const r = await kubectl(fleet.members[0]!.kubeconfig, ['create', '--dry-run=client', '--validate=strict', '-o', 'name', '-f', resolve(deploy, 'flotilla.yaml')]);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split('\n')).toEqual([
      'namespace/flotilla-system',
      'serviceaccount/flotilla',
      'configmap/flotilla-fleet',
      'persistentvolumeclaim/flotilla-cache',
      'deployment.apps/flotilla',
      'service/flotilla',
    ]);
  });
});
