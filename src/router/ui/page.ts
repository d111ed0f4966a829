/**
 * The status page's HTML and style sheet. Every path in them is relative, so the page works where
 * a proxy or the hub puts flotilla under a prefix (kubectl proxy's `/`, the fleet path of
 * aggregated mode); nothing is inline, so the Content-Security-Policy can allow only 'self'.
 */
export function statusPageHtml(pollMs: number, metricsEveryPolls: number): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>flotilla status</title>
<link rel="stylesheet" href="status-page.css">
<script type="module" src="status-page.js"></script>
</head>
<body data-poll-ms="${pollMs}" data-metrics-every="${metricsEveryPolls}" data-state="loading">
<header>
<h1>flotilla</h1>
<span id="synced"></span>
<span id="updated">loading…</span>
</header>
<p id="message" role="status"></p>
<section>
<h2>Members</h2>
<table id="members">
<thead><tr><th scope="col">member</th><th scope="col">labels</th><th scope="col">health</th><th scope="col">why</th><th scope="col">heartbeat</th><th scope="col">last answer</th><th scope="col">objects</th><th scope="col">resources synced</th></tr></thead>
<tbody id="members-body"></tbody>
</table>
</section>
<section>
<h2>Resources</h2>
<table id="resources">
<thead id="resources-head"></thead>
<tbody id="resources-body"></tbody>
</table>
</section>
<section>
<h2>Recent errors</h2>
<ul id="errors"></ul>
</section>
<div class="pair">
<section>
<h2>Watches</h2>
<dl id="watches"></dl>
</section>
<section>
<h2>Live reads</h2>
<dl id="live"></dl>
</section>
</div>
</body>
</html>
`;
}

export const STATUS_PAGE_CSS = `:root { color-scheme: light dark; --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --line: #8884; }
body { font: 14px/1.4 system-ui, sans-serif; margin: 1rem 2rem; }
header { display: flex; gap: 1rem; align-items: baseline; }
h1 { font-size: 1.4rem; margin: 0; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 0.5rem; }
table { border-collapse: collapse; }
th, td { border-bottom: 1px solid var(--line); padding: 0.25rem 0.75rem 0.25rem 0; text-align: left; vertical-align: top; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
.ok, .health.up, .phase.watching { color: var(--ok); }
.health.syncing, .phase.listing, .phase.pending { color: var(--warn); }
.problem, .health.stale, .phase.backoff, .phase.stopped, .erring { color: var(--bad); }
.health { font-weight: 600; }
.why { max-width: 40rem; }
.label { display: inline-block; margin: 0 0.25rem 0.1rem 0; padding: 0 0.3rem; border: 1px solid var(--line); border-radius: 0.2rem; font-size: 0.85em; white-space: nowrap; }
.objects { color: CanvasText; }
.none { color: GrayText; }
.progress { font-size: 0.85em; }
progress { width: 6rem; vertical-align: middle; margin-right: 0.4rem; }
#message:empty { display: none; }
#message { font-weight: 600; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.2rem 1rem; margin: 0; }
dt { color: GrayText; }
dd { margin: 0; }
.pair { display: flex; flex-wrap: wrap; gap: 0 4rem; }
`;
