import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** What of deploy/helm/flotilla needs no Helm (test/e2e/deploy.test.ts lints and renders it). */
const deploy = resolve(import.meta.dirname, '..', '..', '..', 'deploy');

describe('deploy/helm/flotilla', () => {
  it('ships the same Fleet CRD as deploy/crds (Helm installs a chart’s crds/ as they are)', () => {
    const crd = 'fleets.flotilla.io.yaml';
    expect(readFileSync(resolve(deploy, 'helm', 'flotilla', 'crds', crd), 'utf8')).toBe(readFileSync(resolve(deploy, 'crds', crd), 'utf8'));
  });
});
