import type { Checker } from './config-checker.js';
import { RESOURCE_NAME } from './config-checker.js';
import { defaultFleetOptions } from './defaults.js';
import type { FleetOptions, LiveReadsConfig, OperatorsConfig } from './fleet-config.js';

type IntegerOption = { [K in keyof FleetOptions]: FleetOptions[K] extends number ? K : never }[keyof FleetOptions];

/** The integer options (their bounds are the schema's, fleet-schema.ts). */
const INTEGER_OPTIONS: readonly IntegerOption[] = ['listPageSize', 'maxInflightListsPerMember', 'maxInflightListPages', 'watchBookmarkIntervalSeconds', 'minWatchTimeoutSeconds', 'watchCatchUpStallSeconds', 'maxWatchBufferMiB', 'eventLogSize', 'memberHeartbeatMilliseconds'];

const LIVE_READS_INTEGERS = ['concurrency', 'maxBufferMiB', 'maxWatches'] as const;

/** The fleet file's `options`: each one given replaces its default (src/registry/defaults.ts). */
export function parseOptions(c: Checker, raw: unknown): FleetOptions {
  const options = defaultFleetOptions();
  if (raw === undefined) return options;
  const o = c.object(raw, 'options');
  options.dropManagedFields = c.boolean(o?.dropManagedFields, 'options.dropManagedFields') ?? options.dropManagedFields;
  options.freshReads = c.boolean(o?.freshReads, 'options.freshReads') ?? options.freshReads;
  for (const field of INTEGER_OPTIONS) options[field] = c.integer(o?.[field], `options.${field}`) ?? options[field];
  if (o?.liveReads !== undefined) options.liveReads = parseLiveReads(c, o.liveReads, options.liveReads);
  if (o?.operators !== undefined) options.operators = parseOperators(c, o.operators);
  return options;
}

/** `options.operators`: `users` and `groups`, each a list of names (none by default). */
export function parseOperators(c: Checker, raw: unknown): OperatorsConfig {
  const o = c.object(raw, 'options.operators');
  return { users: c.stringList(o?.users, 'options.operators.users') ?? [], groups: c.stringList(o?.groups, 'options.operators.groups') ?? [] };
}

/** `options.liveReads`: which uncached resources are read live, and how many members and bytes they take. */
export function parseLiveReads(c: Checker, raw: unknown, defaults: LiveReadsConfig): LiveReadsConfig {
  const live = c.object(raw, 'options.liveReads');
  const config = { ...defaults };
  config.enabled = c.boolean(live?.enabled, 'options.liveReads.enabled') ?? config.enabled;
  config.exclude = c.stringList(live?.exclude, 'options.liveReads.exclude', (s, sp) => {
    if (!RESOURCE_NAME.test(s)) c.fail(sp, `must be a resource as kubectl names it (resource, or resource.group), got ${JSON.stringify(s)}`);
  }) ?? config.exclude;
  for (const field of LIVE_READS_INTEGERS) config[field] = c.integer(live?.[field], `options.liveReads.${field}`) ?? config[field];
  return config;
}
