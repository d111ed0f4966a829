import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startFleet, type Fleet } from '../fleet/fleet.js';
import { memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { kubectlSession, type KubectlSession } from '../support/kubectl.js';

/**
 * The status page (/ui/) in Debian's Chromium, reached as docs/status-page.md says: through
 * `kubectl proxy`, which adds the kubeconfig's credentials. It lists every member up with its
 * objects; a member stopped shows stale within 5 s, in the DOM and in a screenshot. A caller not
 * allowed /status is refused the page and everything it reads. The test stops a member, so it
 * runs a fleet of its own.
 */
const CHROMIUM = '/usr/bin/chromium';
const [EAST, WEST] = ['ui-east', 'ui-west'];
let fleet: Fleet;
let flotilla: FlotillaProcess;
let proxy: KubectlSession;
let browser: BrowserContext;
let page: Page;
let dir: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  dir = join(inject('fleet').dir, 'ui-fleet');
  // East reviews tokens (the fleet file's first member): west is the one stopped.
  fleet = await startFleet({ names: [EAST, WEST], dir, workloads: false });
  flotilla = await startFlotillaProcess({
    fleet: fleet.info,
    dir: join(dir, 'flotilla'),
    resources: [{ version: 'v1', resource: 'namespaces' }, { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles' }],
  });
  proxy = kubectlSession(flotilla.kubeconfig, ['proxy', '--port=0']);
  const port = (await proxy.waitForOutput(/Starting to serve on [^\s:]+:(\d+)/))[1];
  browser = await chromium.launchPersistentContext(join(dir, 'chromium-profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = await browser.newPage();
  page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/favicon/.test(m.location().url)) pageErrors.push(`console: ${m.text()}`);
  });
  const res = await page.goto(`http://127.0.0.1:${port}/ui/`);
  expect(res?.status()).toBe(200);
  expect(res?.headers()['content-security-policy']).toContain("default-src 'self'");
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await proxy?.stop();
  await flotilla?.stop();
  await fleet?.stop();
});

/** What the members table says now: health and objects by member. */
const membersShown = () =>
  page.$$eval('tr[data-member]', (rows) =>
    Object.fromEntries(rows.map((r) => [r.getAttribute('data-member'), { health: r.getAttribute('data-health'), objects: Number(r.querySelector('[data-objects]')?.getAttribute('data-objects')) }])),
  );

describe('the status page through kubectl proxy', () => {
  it('lists every member up with its objects, then a stopped member stale within 5 s', async () => {
    await page.locator('tr[data-member][data-health="up"]').nth(1).waitFor({ timeout: 60_000 });
    const shown = await membersShown();
    expect(Object.keys(shown).sort()).toEqual([EAST, WEST]);
    // Four namespaces and the bootstrap ClusterRoles, counted.
    for (const m of [EAST, WEST]) expect(shown[m]!.objects).toBeGreaterThan(20);
    expect(await page.locator('tr[data-resource="v1/namespaces"] td[data-member]').count()).toBe(2);

    const stopping = Date.now();
    const stopped = fleet.stopApiserver(WEST);
    await page.waitForSelector(`tr[data-member="${WEST}"][data-health="stale"]`, { timeout: 5_000 });
    const staleAfterMs = Date.now() - stopping;
    await stopped;
    console.log(`status page: ${WEST} shown stale ${staleAfterMs} ms after its apiserver was told to stop`);
    expect((await membersShown())[EAST]!.health).toBe('up');
    expect(await page.textContent(`tr[data-member="${WEST}"] .why`)).toMatch(/silent|clusterroles|namespaces/);
    expect(await page.locator('#errors li').filter({ hasText: WEST }).count()).toBeGreaterThan(0);

    const shot = join(dir, 'screenshots', 'status-page-member-stale.png');
    mkdirSync(join(dir, 'screenshots'), { recursive: true });
    await page.screenshot({ path: shot, fullPage: true });
    const png = readFileSync(shot);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(png.length).toBeGreaterThan(5_000);
    // Every script and style came from flotilla itself: nothing was refused by the policy, nothing threw.
    expect(pageErrors).toEqual([]);
  }, 120_000);

  it('a caller not allowed /status gets 403 for the page and for what it reads', async () => {
    const alice = fleet.info.users.find((u) => u.name === 'alice')!;
    for (const path of ['/ui/', '/ui/status-page.js', '/status', '/metrics']) {
      const res = await memberRequest(flotilla.endpoint, 'GET', path, undefined, { token: alice.token });
      expect(res.status, path).toBe(403);
      expect(JSON.parse(res.body)).toMatchObject({ kind: 'Status', reason: 'Forbidden' });
    }
  }, 60_000);
});
