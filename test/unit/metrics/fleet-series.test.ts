import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMetrics } from '../../../src/metrics/metrics.js';
import type { MemberHeartbeat } from '../../../src/members/heartbeat.js';

describe('fleet series', () => {
  it('member up and silent from the heartbeats; requests by verb and code; latency without watches; refusals by reason; store bytes', async () => {
    let heartbeats: MemberHeartbeat[] = [
      { cluster: 'east', silent: false, lastAnswerAt: new Date().toISOString() },
      { cluster: 'west', silent: true, lastError: 'connect ECONNREFUSED' },
      { cluster: 'north', silent: false },
    ];
    const dataDir = mkdtempSync(join(tmpdir(), 'flotilla-store-series-'));
    writeFileSync(join(dataDir, 'data.mdb'), Buffer.alloc(64 * 1024, 1));
    const m = createMetrics(() => [], undefined, { heartbeats: () => heartbeats, dataDir });
    try {
      m.http.observe('get', 200, 0.003);
      m.http.observe('get', 404, 0.002);
      m.http.observe('watch', 200, 300);
      m.http.observe('get', 200, 30, true);
      m.http.refused('live_busy');
      const text = await m.exposition.metrics();
      expect(text).toContain('flotilla_member_up{cluster="east"} 1');
      expect(text).toContain('flotilla_member_up{cluster="west"} 0');
      expect(text).toContain('flotilla_member_up{cluster="north"} 0');
      expect(text).toContain('flotilla_member_silent{cluster="west"} 1');
      expect(text).toContain('flotilla_member_silent{cluster="east"} 0');
      expect(text).toContain('flotilla_http_requests_total{verb="get",code="200"} 2');
      expect(text).toContain('flotilla_http_requests_total{verb="watch",code="200"} 1');
      expect(text).toContain('flotilla_http_request_duration_seconds_count{verb="get"} 2');
      expect(text).not.toContain('flotilla_http_request_duration_seconds_count{verb="watch"}');
      expect(text).toContain('flotilla_http_requests_refused_total{reason="live_busy"} 1');
      expect(Number(/flotilla_store_bytes (\d+)/.exec(text)?.[1])).toBeGreaterThanOrEqual(64 * 1024);
      // A member gone from the configuration leaves the series.
      heartbeats = heartbeats.slice(0, 1);
      expect(await m.exposition.metrics()).not.toContain('cluster="west"');
    } finally {
      m.stop();
    }
  });
});
