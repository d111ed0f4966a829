import {
  WATCH_FAMILIES,
  memberNames,
  memberRows,
  metricSums,
  recentErrors,
  resourceRows,
  shortBytes,
  shortDuration,
  watchesView,
  type StatusDocument,
} from './status-page-model.js';

/**
 * The status page's script (served at /ui/status-page.js, an ES module): reads ../status every
 * poll and ../metrics every few polls from the same origin, with the page's own credentials (a
 * client certificate, or the ones `kubectl proxy` adds), and draws the tables again. It runs in
 * the browser only; the project compiles it for Node, so the few DOM calls it makes are declared
 * here rather than taking the DOM's types into the whole build.
 */
interface PageElement {
  textContent: string | null;
  className: string;
  readonly dataset: Record<string, string | undefined>;
  setAttribute(name: string, value: string): void;
  append(...nodes: (PageElement | string)[]): void;
  replaceChildren(...nodes: (PageElement | string)[]): void;
}
declare const document: {
  body: PageElement;
  createElement(tag: string): PageElement;
  getElementById(id: string): PageElement | null;
};

type Child = PageElement | string | number | undefined;

function el(tag: string, attributes: Record<string, string | undefined> = {}, ...children: Child[]): PageElement {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attributes)) if (v !== undefined) e.setAttribute(k, v);
  for (const c of children) if (c !== undefined) e.append(typeof c === 'number' ? String(c) : c);
  return e;
}

function part(id: string): PageElement {
  const e = document.getElementById(id);
  if (!e) throw new Error(`the page has no #${id}`);
  return e;
}

const pollMs = Number(document.body.dataset.pollMs ?? '1500');
const metricsEvery = Math.max(1, Number(document.body.dataset.metricsEvery ?? '4'));

/** The server's time of an answer: its Date header has whole seconds, so the browser's clock is used when it agrees. */
function serverNow(date: string | null): number {
  const now = Date.now();
  const said = date === null ? NaN : Date.parse(date);
  return Number.isNaN(said) || Math.abs(now - said) <= 1500 ? now : said;
}

class NotAnswered extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

async function read(path: string, accept: string): Promise<{ body: string; date: string | null }> {
  const res = await fetch(path, { credentials: 'same-origin', headers: { accept } });
  const body = await res.text();
  if (!res.ok) {
    let message = body;
    try {
      message = (JSON.parse(body) as { message?: string }).message ?? body;
    } catch {
      // Not a Status (a proxy's own page): its text is the message.
    }
    throw new NotAnswered(res.status, message);
  }
  return { body, date: res.headers.get('date') };
}

function drawMembers(status: StatusDocument, now: number): void {
  const rows = memberRows(status, now).map((m) =>
    el('tr', { 'data-member': m.name, 'data-health': m.health, 'data-silent': String(m.silent) },
      el('th', { scope: 'row' }, m.name),
      el('td', { class: 'labels' }, ...m.labels.map((l) => el('span', { class: 'label' }, l))),
      el('td', { class: `health ${m.health}` }, m.health),
      el('td', { class: 'why' }, m.why),
      el('td', {}, m.heartbeat),
      el('td', { class: 'number' }, m.lagSeconds === undefined ? 'never answered' : shortDuration(m.lagSeconds)),
      el('td', { class: 'number', 'data-objects': String(m.objects) }, m.objects),
      el('td', { class: 'number' }, `${m.synced} / ${m.resources}`),
    ),
  );
  part('members-body').replaceChildren(...(rows.length ? rows : [el('tr', {}, el('td', { colspan: '8' }, 'no members'))]));
}

function drawResources(status: StatusDocument): void {
  const members = memberNames(status);
  part('resources-head').replaceChildren(el('tr', {}, el('th', { scope: 'col' }, 'resource'), ...members.map((m) => el('th', { scope: 'col' }, m))));
  const rows = resourceRows(status).map((r) =>
    el('tr', { 'data-resource': r.resource },
      el('th', { scope: 'row' }, r.resource),
      ...members.map((m) => {
        const c = r.cells.get(m);
        if (!c) return el('td', { class: 'none' }, '–');
        return el('td', { class: `phase ${c.phase}${c.error ? ' erring' : ''}`, 'data-member': m, 'data-phase': c.phase, title: c.error },
          el('span', { class: 'phase-name' }, c.phase),
          ' ',
          el('span', { class: 'objects' }, c.objects),
          c.progress
            ? el('div', { class: 'progress' },
                c.progress.fraction === undefined ? undefined : el('progress', { max: '1', value: String(c.progress.fraction) }),
                el('span', {}, c.progress.text))
            : undefined,
        );
      }),
    ),
  );
  part('resources-body').replaceChildren(...rows);
}

function drawErrors(status: StatusDocument): void {
  const rows = recentErrors(status).map((e) => el('li', {}, el('strong', {}, e.where), ': ', e.error, e.at ? el('time', { datetime: e.at }, ` (${e.at})`) : undefined));
  part('errors').replaceChildren(...(rows.length ? rows : [el('li', { class: 'none' }, 'none')]));
}

function definitions(id: string, pairs: [string, Child][]): void {
  part(id).replaceChildren(...pairs.flatMap(([term, value]) => [el('dt', {}, term), el('dd', {}, value ?? '–')]));
}

function drawWatches(status: StatusDocument, metrics: Map<string, number> | undefined): void {
  const w = watchesView(status, metrics);
  definitions('watches', [
    ['client watches open', w.open],
    ['ended for falling behind', w.evicted],
    ['live watches open', w.liveOpen === undefined ? undefined : `${w.liveOpen} of ${w.liveMax}`],
    ['live watches refused', w.liveRefused],
  ]);
}

function drawLive(status: StatusDocument): void {
  const live = status.live;
  if (!live) return definitions('live', [['live reads', 'not reported']]);
  definitions('live', [
    ['enabled', live.enabled ? 'yes' : 'no'],
    ['served', live.served],
    ['excluded', live.exclude.length ? live.exclude.join(', ') : 'none'],
    ['members asked at once', live.concurrency],
    ['answers held', live.buffer ? `${shortBytes(live.buffer.heldBytes)} of ${shortBytes(live.buffer.capacityBytes)}` : undefined],
    ['refused (busy, too large)', live.buffer ? `${live.buffer.refusedBusy}, ${live.buffer.refusedTooLarge}` : undefined],
  ]);
}

function say(message: string, kind: 'ok' | 'problem'): void {
  const m = part('message');
  m.className = kind;
  m.textContent = message;
}

/** The watch series; what was read last when /metrics does not answer (the page goes on from /status). */
async function readWatchMetrics(): Promise<Map<string, number> | undefined> {
  try {
    return metricSums((await read('../metrics', 'text/plain')).body, WATCH_FAMILIES);
  } catch {
    return metrics;
  }
}

let metrics: Map<string, number> | undefined;
let polls = 0;

async function poll(): Promise<void> {
  try {
    const answer = await read('../status', 'application/json');
    const status = JSON.parse(answer.body) as StatusDocument;
    const now = serverNow(answer.date);
    if (polls++ % metricsEvery === 0) metrics = await readWatchMetrics();
    drawMembers(status, now);
    drawResources(status);
    drawErrors(status);
    drawWatches(status, metrics);
    drawLive(status);
    const synced = part('synced');
    synced.textContent = status.synced ? 'synced' : 'syncing';
    synced.className = status.synced ? 'ok' : 'problem';
    part('updated').textContent = `updated ${new Date(now).toLocaleTimeString()}`;
    document.body.dataset.state = 'shown';
    say('', 'ok');
  } catch (e) {
    const notAllowed = e instanceof NotAnswered && e.code === 403;
    document.body.dataset.state = notAllowed ? 'not-allowed' : 'unreachable';
    if (notAllowed) say(`not allowed: ${e.message}`, 'problem');
    else if (e instanceof NotAnswered) say(`flotilla answered ${e.code}: ${e.message}`, 'problem');
    else say(`flotilla did not answer: ${(e as Error).message}`, 'problem');
  }
  setTimeout(() => void poll(), pollMs);
}

void poll();
