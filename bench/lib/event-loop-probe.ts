import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { trackEventLoopDelay } from '../../src/metrics/event-loop-delay.js';
import type { BenchContext } from './context.js';
import { parseMetricsText } from './flotilla.js';
import { forkHelper } from './forked-server.js';

/**
 * The floor under flotilla's event-loop delay: a forked process that does nothing but keep
 * flotilla's own delay histogram (metrics/event-loop-delay.ts, the same 20 ms timer and buckets),
 * on the same machine over the same span. Its delays are what waiting for a CPU alone costs an
 * event loop there while the sync keeps the CPUs busy; what flotilla's exceed them by is its own
 * turns.
 */
const PROBE_SCRIPT = fileURLToPath(import.meta.url);

export interface EventLoopProbe {
  /** The probe's series so far (parseMetricsText), its delay histogram among them; then it exits. */
  finish(): Promise<Map<string, number>>;
}

export async function startEventLoopProbe(ctx: BenchContext): Promise<EventLoopProbe> {
  const { proc, stop } = await forkHelper(ctx, PROBE_SCRIPT, ['--probe']);
  return {
    async finish() {
      const text = new Promise<string>((resolve, reject) => {
        proc.once('message', (m: string) => resolve(m));
        proc.once('exit', (code) => reject(new Error(`event-loop probe exited (${code}) before it reported`)));
      });
      proc.send('report');
      try {
        return parseMetricsText(await text);
      } finally {
        await stop();
      }
    },
  };
}

/** The forked side: the histogram, and the registry's text on request. */
function runProbe(): void {
  const registry = new Registry();
  trackEventLoopDelay(registry);
  // Kept alive by the IPC channel alone, as flotilla is by its server: the timer is unref'd.
  process.on('message', () => {
    void registry.metrics().then((text) => process.send!(text, () => process.exit(0)));
  });
  process.on('disconnect', () => process.exit(0));
  process.send!('started');
}

if (process.argv[1] === PROBE_SCRIPT && process.argv[2] === '--probe') runProbe();
