/**
 * Waiting in line, on the client side: the first refused attempt takes a ticket (the store keeps
 * our place), then every store change that names us (or the poll) tries again, until granted,
 * refused for good, the deadline or an abort.
 */
import type { AcquireStatus, LeaseRef, Outcome, WaitTicket } from '../core/decide.js';
import { waiterKey } from '../core/decide.js';
import type { Lock } from '../core/lock.js';
import { randomBytesPooled } from '../host/random.js';
import type { StoreCore } from './store.js';

/** A waiter's place in line lapses this long after its last refresh (it refreshes well before). */
const TICKET_TTL_MS = 10_000;

/** One attempt at the acquire, with or without a ticket in line. */
export type Attempt = (ticket: WaitTicket, cached: boolean) => Promise<Outcome<AcquireStatus>>;

export interface WaitOptions {
  signal?: AbortSignal | undefined;
  onWait?: ((conflicts: Lock[]) => void) | undefined;
}

/** Resolves after `ms`, or sooner when `wake` is called; its timer keeps a waiting process alive. */
function pause(ms: number): { done: Promise<void>; wake: () => void } {
  let wake = () => {};
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, Math.max(0, ms));
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return { done, wake };
}

export async function waitInLine(
  core: StoreCore,
  session: {
    attempt: Attempt;
    leave(hash: string): Promise<unknown>;
    releaseRefs(refs: readonly LeaseRef[]): Promise<unknown>;
    refsOf(locks: readonly Lock[]): LeaseRef[];
  },
  wait: number,
  opts: WaitOptions,
): Promise<Outcome<AcquireStatus>> {
  const { signal } = opts;
  const deadline = performance.now() + wait * 1000;
  const secret = randomBytesPooled(16).toString('base64url');
  const hash = core.hashToken(secret);
  let woken = false;
  let sleeping: ReturnType<typeof pause> | null = null;
  // Woken by a commit that names us (not by a timer): the store's snapshot (Redis: the handle's,
  // with what that commit wrote; file: the log read without its mutex) shows the locks it handed
  // us, so a first look needs no round trip and no mutex.
  let noticed = false;
  const poke = () => {
    noticed = true;
    woken = true;
    sleeping?.wake();
  };
  const abort = () => {
    woken = true;
    sleeping?.wake();
  };
  signal?.addEventListener('abort', abort);
  let unwatch: (() => Promise<void>) | null = null;
  let queued = false;
  try {
    // Only the commits that concern this waiter wake it (it is next, or its way is free), so
    // waiters in line do not all decide on every hand-off. Listening before the first attempt:
    // a hand-off made while it is in flight is not missed.
    unwatch = await Promise.resolve()
      .then(() => core.watchWaiter(waiterKey(core.waiter()), poke))
      .catch(() => async () => {});
    for (;;) {
      if (signal?.aborted) throw signal.reason;
      const last = performance.now() >= deadline;
      const cached = noticed && !last;
      woken = false;
      noticed = false;
      const ticket = { hash, secret, waiter: core.waiter(), ttlMs: TICKET_TTL_MS, last };
      const outcome = await session.attempt(ticket, cached);
      if (outcome.status !== 'held') {
        // Whatever the answer, the decision took our tickets away with it.
        queued = false;
        if (signal?.aborted) {
          if (outcome.status === 'acquired')
            await session.releaseRefs(session.refsOf(outcome.locks)).catch(() => {});
          throw signal.reason;
        }
        return outcome;
      }
      queued = true;
      // An answer from the snapshot that says "held" may be out of date: ask the store at once.
      if (cached) {
        woken = true;
        continue;
      }
      try {
        opts.onWait?.(outcome.conflicts);
      } catch {
        // A live line that fails must not end the wait.
      }
      if (!woken) {
        // A lease in the way lapses without any commit to announce it: look again right then.
        const lapse = Math.min(
          ...outcome.conflicts.map((l) =>
            l.expires_at ? Date.parse(l.expires_at) - Date.now() + 5 : core.pollMs,
          ),
        );
        sleeping = pause(Math.min(core.pollMs, Math.max(lapse, 0), deadline - performance.now()));
        await sleeping.done;
        sleeping = null;
      }
    }
  } catch (error) {
    // Interrupted or failed: leave the line, so that nobody waits behind a request that is gone.
    if (queued) await session.leave(hash).catch(() => {});
    throw error;
  } finally {
    signal?.removeEventListener('abort', abort);
    if (unwatch) await unwatch().catch(() => {});
  }
}
