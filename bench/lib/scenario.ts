import type { BenchContext } from './context.js';
import type { Figure, ScenarioFacts } from './report.js';
import type { MemberEndpoint } from '../../test/fleet/http.js';
import { BenchClient, median, occurrenceCounter, type TimedResponse } from './http.js';

export interface ScenarioResult {
  figures: Figure[];
  facts: ScenarioFacts;
}

export interface Scenario {
  /** As typed on the command line. */
  name: string;
  run(ctx: BenchContext, emit: (f: Figure) => void): Promise<ScenarioResult>;
}

export const MB = 1024 * 1024;
/** A fleet-wide list of 1M objects, or one read from disk under a memory limit, takes minutes. */
export const LIST_TIMEOUT_MS = 600_000;
/**
 * Once in each pod of a JSON list, whoever serves it: its metadata's creationTimestamp (nothing
 * else in a pod has that key). Counting it counts the items without parsing. Not the kind: a
 * member lists built-in kinds without it, and so does flotilla; karmada-search with it.
 */
export const POD_ITEM = '"creationTimestamp":"';

/** Collects a scenario's figures and prints each as it is measured. */
export function figureSink(scenario: string, emit: (f: Figure) => void): { figures: Figure[]; add(metric: string, value: number, unit: string, target?: Figure['target']): void } {
  const figures: Figure[] = [];
  return {
    figures,
    add(metric, value, unit, target) {
      const f: Figure = { scenario, metric, value, unit, ...(target ? { target } : {}) };
      figures.push(f);
      emit(f);
    },
  };
}

/** The response, or an error naming what failed and how. */
export function ok(r: TimedResponse, what: string): TimedResponse {
  if (r.status !== 200) throw new Error(`${what}: ${r.status} ${r.errorText ?? ''}`);
  return r;
}

/**
 * The count, or an error: a list that held other objects than the seed says it should is no
 * measurement, and neither is a count of 0 from a needle the answer no longer carries.
 */
export function expectObjects(counted: number, expected: number, what: string): number {
  if (counted !== expected) throw new Error(`${what}: ${counted} objects listed, expected ${expected}`);
  return counted;
}

/**
 * The fleet-wide pod list through flotilla: one that counts the items (and warms up; it must hold
 * `expected`), then `rounds` timed ones; bodies are read to the end and discarded. `bytes`: one
 * list's size.
 */
export async function fleetLists(ep: MemberEndpoint, what: string, rounds: number, expected: number, query = ''): Promise<{ ms: number; objects: number; bytes: number }> {
  const path = query ? `/api/v1/pods?${query}` : '/api/v1/pods';
  const client = new BenchClient(ep);
  try {
    const counter = occurrenceCounter(POD_ITEM);
    const warm = ok(await client.get(path, { timeoutMs: LIST_TIMEOUT_MS, onChunk: counter.onChunk }), `${what}: fleet list`);
    expectObjects(counter.count(), expected, `${what}: fleet list`);
    const ms: number[] = [];
    for (let round = 0; round < rounds; round++) ms.push(ok(await client.get(path, { timeoutMs: LIST_TIMEOUT_MS }), `${what}: fleet list`).ms);
    return { ms: median(ms), objects: counter.count(), bytes: warm.bytes };
  } finally {
    client.close();
  }
}
