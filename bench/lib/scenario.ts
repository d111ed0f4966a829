import type { BenchContext } from './context.js';
import type { Figure, ScenarioFacts } from './report.js';
import type { TimedResponse } from './http.js';

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
