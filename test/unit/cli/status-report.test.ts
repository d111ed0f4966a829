import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { CacherStatus } from '../../../src/cacher/cacher-status.js';
import { formatDocument, memberHealth, readStatus, renderClusters, renderStatus, type FlotillaStatus } from '../../../src/cli/status-report.js';
import { renderTable, shortDuration } from '../../../src/cli/text-table.js';

const NOW = Date.parse('2026-01-01T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

function cacher(c: Partial<CacherStatus> & Pick<CacherStatus, 'cluster' | 'resource'>): CacherStatus {
  return { phase: 'watching', synced: true, objects: 0, relists: 0, watches: 1, historyResets: 0, ...c };
}

const STATUS: FlotillaStatus = {
  synced: false,
  members: [
    { cluster: 'east', silent: false, lastAnswerAt: ago(1) },
    { cluster: 'west', silent: true, silentSince: ago(7), lastAnswerAt: ago(9), lastError: 'connect ECONNREFUSED 127.0.0.1:6443' },
  ],
  cachers: [
    cacher({ cluster: 'west', resource: 'v1/pods', objects: 12, lastEventAt: ago(30) }),
    cacher({ cluster: 'east', resource: 'v1/pods', objects: 40, lastEventAt: ago(2) }),
    cacher({ cluster: 'east', resource: 'apps/v1/deployments', objects: 3, lastEventAt: ago(600) }),
    cacher({ cluster: 'west', resource: 'apps/v1/deployments', phase: 'backoff', synced: false, objects: 0, lastError: 'deployments.apps is forbidden: User "flotilla" cannot list\nsecond line' }),
  ],
  live: { enabled: true },
};

describe('flotilla status, as a table', () => {
  it('shows the members (a silent one stale) and a row per member and resource', () => {
    expect(renderStatus(STATUS, NOW, false)).toBe(
      [
        'SYNCED   MEMBERS   CACHERS',
        'no       2         4',
        '',
        'MEMBER   HEALTH   LAST ANSWER   ERROR',
        'east     ok       1s ago',
        'west     stale    9s ago        silent for 7s: connect ECONNREFUSED 127.0.0.1:6443',
        '',
        'MEMBER   RESOURCE              PHASE      SYNCED   OBJECTS   LAST EVENT   ERROR',
        'east     apps/v1/deployments   watching   yes      3         10m',
        'east     v1/pods               watching   yes      40        2s',
        'west     apps/v1/deployments   backoff    no       0         -            deployments.apps is forbidden: User "flotilla" cannot list',
        'west     v1/pods               watching   yes      12        30s',
        '',
      ].join('\n'),
    );
  });

  it('shows a LABELS column once some member has labels, key=value sorted by key', () => {
    const labelled = { ...STATUS, members: STATUS.members.map((m) => ({ ...m, labels: (m.cluster === 'east' ? { region: 'eu', env: 'prod' } : {}) as Record<string, string> })) };
    expect(renderStatus(labelled, NOW, false).split('\n').slice(3, 6)).toEqual([
      'MEMBER   HEALTH   LAST ANSWER   LABELS               ERROR',
      'east     ok       1s ago        env=prod,region=eu',
      'west     stale    9s ago                             silent for 7s: connect ECONNREFUSED 127.0.0.1:6443',
    ]);
  });

  it('colours only when asked (a TTY), without moving a column', () => {
    const plain = renderStatus(STATUS, NOW, false);
    const coloured = renderStatus(STATUS, NOW, true);
    expect(plain).not.toContain('\u001b[');
    expect(coloured).toContain('\u001b[31mstale\u001b[0m');
    expect(coloured).toContain('\u001b[32mok\u001b[0m');
    // eslint-disable-next-line no-control-regex
    expect(coloured.replace(/\u001b\[\d+m/g, '')).toBe(plain);
  });

  it('adds a namespace column only when a cacher caches one namespace', () => {
    const one = { ...STATUS, cachers: [cacher({ cluster: 'east', resource: 'v1/secrets', namespace: 'shop', objects: 2 })] };
    expect(renderStatus(one, NOW, false)).toContain('MEMBER   RESOURCE     NAMESPACE   PHASE      SYNCED   OBJECTS   LAST EVENT   ERROR\neast     v1/secrets   shop        watching   yes      2         -\n');
  });
});

describe('kubectl flotilla clusters', () => {
  it('shows a row a member: health, cachers synced, objects, its newest event, why silent', () => {
    expect(renderClusters(STATUS, NOW, false)).toBe(
      [
        'NAME   HEALTH   SYNCED   OBJECTS   LAST EVENT   SILENT',
        'east   ok       2/2      43        2s',
        'west   stale    1/2      12        30s          silent for 7s: connect ECONNREFUSED 127.0.0.1:6443',
        '',
      ].join('\n'),
    );
  });

  it('shows labels when /status carries them', () => {
    const labelled = { ...STATUS, members: STATUS.members.map((m) => ({ ...m, labels: (m.cluster === 'east' ? { region: 'eu', tier: 'prod' } : {}) as Record<string, string> })) };
    expect(renderClusters(labelled, NOW, false).split('\n')[0]).toBe('NAME   HEALTH   SYNCED   OBJECTS   LAST EVENT   LABELS                SILENT');
    expect(renderClusters(labelled, NOW, false).split('\n')[1]).toBe('east   ok       2/2      43        2s           region=eu,tier=prod');
  });
});

describe('member health', () => {
  it('is stale when silent, errors when a cacher fails unsynced, syncing before its first list, else ok', () => {
    expect(memberHealth({ cluster: 'a', silent: true }, []).text).toBe('stale');
    expect(memberHealth({ cluster: 'a', silent: false }, [cacher({ cluster: 'a', resource: 'v1/pods', synced: false, lastError: 'x' })]).text).toBe('errors');
    expect(memberHealth({ cluster: 'a', silent: false }, [cacher({ cluster: 'a', resource: 'v1/pods', synced: false, phase: 'listing' })]).text).toBe('syncing');
    // A synced cacher's last error is history: it recovered.
    expect(memberHealth({ cluster: 'a', silent: false }, [cacher({ cluster: 'a', resource: 'v1/pods', lastError: 'x' })]).text).toBe('ok');
  });
});

describe('-o json|yaml and the /status document', () => {
  it('prints the document as flotilla gave it, fields the CLI does not know kept', () => {
    const body = JSON.stringify(STATUS);
    expect(JSON.parse(formatDocument(JSON.parse(body), 'json'))).toEqual(STATUS);
    expect(parseYaml(formatDocument(JSON.parse(body), 'yaml'))).toEqual(STATUS);
  });

  it('refuses what is not a /status answer', () => {
    expect(() => readStatus('{"kind":"Status"}')).toThrow(/not flotilla's \/status/);
    expect(readStatus(JSON.stringify(STATUS)).members).toHaveLength(2);
  });
});

describe('text tables', () => {
  it('pads every column but the last, three spaces apart', () => {
    expect(renderTable(['A', 'LONGER'], [['xyz', 'v'], ['q', '']], false)).toBe('A     LONGER\nxyz   v\nq\n');
  });

  it('shows durations as kubectl\'s AGE does', () => {
    expect([0, 59_000, 119_000, 200_000, 600_000, 7_200_000, 86_400_000, 5 * 86_400_000].map(shortDuration)).toEqual(['0s', '59s', '119s', '3m20s', '10m', '120m', '24h', '5d']);
  });
});
