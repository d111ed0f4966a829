import { describe, expect, it } from 'vitest';
import { ConfigError, parseFleetConfig } from '../../../src/registry/config.js';

/**
 * The fleet file's defaults (src/registry/defaults.ts) as the README documents them, and the one
 * integer check (Checker.intIn) every integer field goes through.
 */
const parse = (text: string) => parseFleetConfig(`clusters: [{ name: east, server: https://10.0.0.1:6443 }]\nresources: [{ version: v1, resource: pods }]\n${text}`, '/etc/flotilla/fleet.yaml');

describe('the fleet file’s defaults', () => {
  it('are the documented ones when the file leaves everything out', () => {
    const c = parse('');
    expect(c.options).toEqual({
      dropManagedFields: true,
      listPageSize: 500,
      maxInflightListsPerMember: 4,
      maxInflightListPages: 8,
      watchBookmarkIntervalSeconds: 30,
      minWatchTimeoutSeconds: 1800,
      watchCatchUpStallSeconds: 60,
      maxWatchBufferMiB: 16,
      eventLogSize: 100_000,
      liveReads: { enabled: true, exclude: [], concurrency: 256, maxBufferMiB: 512, maxWatches: 1000 },
      memberHeartbeatMilliseconds: 2000,
      freshReads: true,
      operators: { users: [], groups: [] },
    });
    expect(c.authentication).toEqual({ cacheTTLSeconds: 10, tokenReviewStaleSeconds: 120, anonymous: false });
    expect(c.clusters[0]!.priority).toBe(0);
  });

  it('are fresh for each file: one file’s exclude list is not another’s', () => {
    const first = parse('options: { liveReads: { exclude: [secrets] } }');
    expect(parse('').options.liveReads.exclude).toEqual([]);
    expect(first.options.liveReads.exclude).toEqual(['secrets']);
  });
});

describe('integer fields', () => {
  const problems = (text: string): string[] => {
    try {
      parse(text);
    } catch (e) {
      if (e instanceof ConfigError) return e.message.split('\n');
      throw e;
    }
    return [];
  };

  it('each say the same of a value that is not an integer in range', () => {
    expect(problems('options: { listPageSize: 10001, eventLogSize: "many", liveReads: { concurrency: 0.5 } }\nauthentication: { cacheTTLSeconds: 3601, tokenReviewStaleSeconds: null }')).toEqual([
      'fleet.yaml: options.listPageSize: must be an integer from 1 to 10000, got number 10001',
      'fleet.yaml: options.eventLogSize: must be an integer from 1000 to 100000000, got string "many"',
      'fleet.yaml: options.liveReads.concurrency: must be an integer from 1 to 10000, got number 0.5',
      'fleet.yaml: authentication.cacheTTLSeconds: must be an integer from 0 to 3600, got number 3601',
      'fleet.yaml: authentication.tokenReviewStaleSeconds: must be an integer from 0 to 86400, got null',
    ]);
  });

  it('take their bounds as given, and a cluster’s priority left empty is 0', () => {
    const c = parseFleetConfig('clusters: [{ name: a, server: https://a, priority: -1000 }, { name: b, server: https://b, priority: ~ }]\nresources: [{ version: v1, resource: pods }]\noptions: { listPageSize: 10000 }\nauthentication: { cacheTTLSeconds: 0 }', 'fleet.yaml');
    expect(c.clusters.map((cl) => cl.priority)).toEqual([-1000, 0]);
    expect(c.options.listPageSize).toBe(10000);
    expect(c.authentication.cacheTTLSeconds).toBe(0);
    expect(() => parseFleetConfig('clusters: [{ name: a, server: https://a, priority: 1001 }]\nresources: [{ version: v1, resource: pods }]', 'fleet.yaml')).toThrow('fleet.yaml: clusters[0].priority: must be an integer from -1000 to 1000, got number 1001');
  });
});
