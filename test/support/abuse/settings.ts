/**
 * An abuse suite's run, from the environment both suites read: FLOTILLA_ABUSE_RUNS (3000 by
 * default, time-bounded; past 20,000, or FLOTILLA_ABUSE_PROFILE=full, the full profile),
 * FLOTILLA_ABUSE_SEED, FLOTILLA_ABUSE_TIME_LIMIT_S. A suite gives its own CI time limit, shrink
 * budgets and slack for set-up.
 */
export interface AbuseRun {
  runs: number;
  full: boolean;
  profile: 'full' | 'ci';
  seed: number;
  timeLimitMs: number;
  shrink: { perKindMs: number; totalMs: number };
  testTimeoutMs: number;
}

export interface AbuseRunDefaults {
  ciTimeLimitS: number;
  shrink: { full: AbuseRun['shrink']; ci: AbuseRun['shrink'] };
  slackMs: number;
}

export function abuseRun(env: NodeJS.ProcessEnv, d: AbuseRunDefaults): AbuseRun {
  const runs = Number(env.FLOTILLA_ABUSE_RUNS ?? 3000);
  const full = runs > 20_000 || env.FLOTILLA_ABUSE_PROFILE === 'full';
  const seed = env.FLOTILLA_ABUSE_SEED !== undefined ? Number(env.FLOTILLA_ABUSE_SEED) : Date.now() % 2_147_483_647;
  const timeLimitMs = (env.FLOTILLA_ABUSE_TIME_LIMIT_S !== undefined ? Number(env.FLOTILLA_ABUSE_TIME_LIMIT_S) : full ? 4 * 3600 : d.ciTimeLimitS) * 1000;
  const shrink = full ? d.shrink.full : d.shrink.ci;
  return { runs, full, profile: full ? 'full' : 'ci', seed, timeLimitMs, shrink, testTimeoutMs: timeLimitMs + shrink.totalMs + d.slackMs };
}
