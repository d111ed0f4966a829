import type { Checker } from './config-checker.js';
import { RESOURCE_NAME } from './config-checker.js';
import { defaultFleetOptions } from './defaults.js';
import type { FleetOptions, LiveReadsConfig, OperatorsConfig } from './fleet-config.js';

const OPTION_FIELDS = ['dropManagedFields', 'listPageSize', 'maxInflightListsPerMember', 'maxInflightListPages', 'watchBookmarkIntervalSeconds', 'minWatchTimeoutSeconds', 'watchCatchUpStallSeconds', 'maxWatchBufferMiB', 'eventLogSize', 'liveReads', 'memberHeartbeatMilliseconds', 'operators'];

type IntegerOption = { [K in keyof FleetOptions]: FleetOptions[K] extends number ? K : never }[keyof FleetOptions];

/** The integer options, in the order their problems are named, and the values each may take. */
const INTEGER_OPTIONS: readonly (readonly [IntegerOption, number, number])[] = [
  ['listPageSize', 1, 10000],
  ['maxInflightListsPerMember', 1, 100],
  ['maxInflightListPages', 1, 10_000],
  ['watchBookmarkIntervalSeconds', 1, 3600],
  ['minWatchTimeoutSeconds', 1, 86400],
  ['watchCatchUpStallSeconds', 1, 86400],
  ['maxWatchBufferMiB', 1, 1024],
  ['eventLogSize', 1000, 100_000_000],
  ['memberHeartbeatMilliseconds', 50, 60_000],
];

const LIVE_READS_INTEGERS: readonly (readonly ['concurrency' | 'maxBufferMiB' | 'maxWatches', number])[] = [
  ['concurrency', 10_000],
  ['maxBufferMiB', 1_048_576],
  ['maxWatches', 1_000_000],
];

/** The fleet file's `options`: each one given replaces its default (src/registry/defaults.ts). */
export function parseOptions(c: Checker, raw: unknown): FleetOptions {
  const options = defaultFleetOptions();
  if (raw === undefined) return options;
  const o = c.object(raw, 'options', OPTION_FIELDS);
  options.dropManagedFields = c.boolean(o?.dropManagedFields, 'options.dropManagedFields') ?? options.dropManagedFields;
  for (const [field, min, max] of INTEGER_OPTIONS) options[field] = c.intIn(o?.[field], `options.${field}`, min, max) ?? options[field];
  if (o?.liveReads !== undefined) options.liveReads = parseLiveReads(c, o.liveReads, options.liveReads);
  if (o?.operators !== undefined) options.operators = parseOperators(c, o.operators);
  return options;
}

/** `options.operators`: `users` and `groups`, each a list of names. */
export function parseOperators(c: Checker, raw: unknown): OperatorsConfig {
  const o = c.object(raw, 'options.operators', ['users', 'groups']);
  const named = (s: string, sp: string) => {
    if (s === '') c.fail(sp, 'must not be empty');
  };
  return { users: c.stringList(o?.users, 'options.operators.users', named) ?? [], groups: c.stringList(o?.groups, 'options.operators.groups', named) ?? [] };
}

/** `options.liveReads`: which uncached resources are read live, and how many members and bytes they take. */
export function parseLiveReads(c: Checker, raw: unknown, defaults: LiveReadsConfig): LiveReadsConfig {
  const live = c.object(raw, 'options.liveReads', ['enabled', 'exclude', 'concurrency', 'maxBufferMiB', 'maxWatches']);
  const config = { ...defaults };
  config.enabled = c.boolean(live?.enabled, 'options.liveReads.enabled') ?? config.enabled;
  config.exclude = c.stringList(live?.exclude, 'options.liveReads.exclude', (s, sp) => {
    if (!RESOURCE_NAME.test(s)) c.fail(sp, `must be a resource as kubectl names it (resource, or resource.group), got ${JSON.stringify(s)}`);
  }) ?? config.exclude;
  for (const [field, max] of LIVE_READS_INTEGERS) config[field] = c.intIn(live?.[field], `options.liveReads.${field}`, 1, max) ?? config[field];
  return config;
}
