import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

describe('the protobuf schema', () => {
  // The transcoder writes what this file says; when the fleet's Kubernetes release moves, the
  // generator is what changes with it, and this says whether the file was written again.
  it('is what scripts/protobuf-schema writes from the fleet\'s k8s.io/api, byte for byte', () => {
    const generated = execFileSync('go', ['run', '.'], {
      cwd: `${root}scripts/protobuf-schema`,
      encoding: 'utf8',
      maxBuffer: 64 << 20,
      env: { ...process.env, GOFLAGS: '-mod=readonly -buildvcs=false' },
    });
    const committed = readFileSync(`${root}src/api/protobuf-schema.generated.ts`, 'utf8');
    // Compared whole, reported briefly: a diff of 231 KB would bury the message.
    let same = 0;
    while (same < committed.length && committed[same] === generated[same]) same++;
    const firstDifference = same === committed.length ? -1 : same;
    expect({ sameLength: generated.length === committed.length, firstDifference, regenerate: 'cd scripts/protobuf-schema && go run . > ../../src/api/protobuf-schema.generated.ts' })
      .toEqual({ sameLength: true, firstDifference: -1, regenerate: expect.any(String) });
  }, 600_000);
});
