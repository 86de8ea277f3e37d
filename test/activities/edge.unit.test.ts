// untilAborted (activities/edge.ts): a read whose result is no longer wanted once the activity is
// cancelled ends the wait at the abort, with the abort's reason; otherwise it is the read itself.
import { describe, expect, it } from 'vitest';
import { untilAborted } from '../../activities/edge.ts';

describe('untilAborted', () => {
  it('resolves or rejects as the work does while the signal is not aborted', async () => {
    await expect(untilAborted(Promise.resolve(7), new AbortController().signal)).resolves.toBe(7);
    await expect(untilAborted(Promise.reject(new Error('refused')), new AbortController().signal)).rejects.toThrow('refused');
  });

  it('rejects with the reason as soon as the signal aborts, without waiting for the work; a later rejection of the work is swallowed', async () => {
    const stop = new AbortController();
    let fail: (err: Error) => void = () => {};
    const work = new Promise<number>((_, reject) => (fail = reject));
    const waiting = untilAborted(work, stop.signal);
    stop.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    fail(new Error('too late')); // must not surface as an unhandled rejection
    await new Promise((r) => setTimeout(r, 10));
  });

  it('rejects at once when the signal is aborted already', async () => {
    const stop = new AbortController();
    stop.abort(new Error('before'));
    await expect(untilAborted(new Promise<number>(() => {}), stop.signal)).rejects.toThrow('before');
  });
});
