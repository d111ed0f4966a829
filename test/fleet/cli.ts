#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { startFleet } from './fleet.js';

/**
 * `npm run fleet -- --members east,west --dir .cache/fleet`: starts a test fleet from the command
 * line and keeps it up until SIGINT/SIGTERM, then stops every process it started.
 */
const { values } = parseArgs({
  options: {
    members: { type: 'string', default: 'east,west,north' },
    dir: { type: 'string', default: '.cache/fleet' },
    nodes: { type: 'string', default: '2' },
  },
});

const fleet = await startFleet({
  names: values.members.split(',').map((s) => s.trim()).filter(Boolean),
  dir: resolve(values.dir),
  nodesPerMember: Number(values.nodes),
});
for (const m of fleet.info.members) console.log(`${m.name}: ${m.server} kubeconfig=${m.kubeconfig}`);
console.log('fleet is up; Ctrl-C stops it');
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    void fleet.stop().then(() => process.exit(0));
  });
}
