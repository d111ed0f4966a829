import { describe, expect, it } from 'vitest';
import { GenerationFlight } from '../../../src/util/generation-flight.js';

/** A request source whose requests the test answers by hand, in the order they started. */
function manualRequests() {
  const started: { n: number; answer: (v: number) => void }[] = [];
  let n = 0;
  const start = () => new Promise<number>((resolve) => {
    const mine = ++n;
    started.push({ n: mine, answer: () => resolve(mine) });
  });
  return { start, started };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('GenerationFlight', () => {
  it('callers arriving while nothing runs start one request and share it', async () => {
    const { start, started } = manualRequests();
    const flight = new GenerationFlight(start);
    const a = flight.get();
    const b = flight.get();
    // b arrived after a's request started: it must not take a's answer.
    expect(started).toHaveLength(1);
    started[0]!.answer(0);
    expect(await a).toBe(1);
    await tick();
    expect(started).toHaveLength(2);
    started[1]!.answer(0);
    expect(await b).toBe(2);
  });

  it('never gives a caller the answer of a request started before it arrived; callers arriving during one request share the next', async () => {
    const { start, started } = manualRequests();
    const flight = new GenerationFlight(start);
    const first = flight.get();
    const during = [flight.get(), flight.get(), flight.get()];
    expect(started).toHaveLength(1);
    started[0]!.answer(0);
    expect(await first).toBe(1);
    await tick();
    // One more request, started after all three arrived, shared by them.
    expect(started).toHaveLength(2);
    const late = flight.get();
    started[1]!.answer(0);
    expect(await Promise.all(during)).toEqual([2, 2, 2]);
    await tick();
    expect(started).toHaveLength(3);
    started[2]!.answer(0);
    expect(await late).toBe(3);
    expect(flight.idle()).toBe(true);
  });

  it('a failed request fails its callers only; the next callers get a new one', async () => {
    let calls = 0;
    const flight = new GenerationFlight(() => (++calls === 1 ? Promise.reject(new Error('member down')) : Promise.resolve(calls)));
    await expect(flight.get()).rejects.toThrow('member down');
    expect(await flight.get()).toBe(2);
  });
});
