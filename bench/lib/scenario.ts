import type { BenchContext } from './context.js';
import type { Figure, ScenarioFacts } from './report.js';

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
