// The declarations name Symbol.asyncDispose: this (kept in the .d.ts by preserve) brings its lib to a TypeScript user whose own
// `lib` predates it (ES2022, say), as @types/node does, instead of failing their build with TS2550.
/// <reference lib="esnext.disposable" preserve="true" />
/**
 * A held lease from code: renews itself at a third of its TTL, and aborts its `signal` *before* the
 * lease can lapse when renewals fail, so work under it stops before another agent may take over.
 *
 * Time is tracked twice: on the monotonic clock (immune to clock changes) and on the wall clock,
 * which keeps counting while the machine sleeps (a laptop lid, a paused VM); the store's expiry
 * counts that time too, so a lease that slept past its deadline is lost even though no monotonic
 * time went by. Every timer is unref'd and catches everything: a lost lease is reported through
 * the signal (and `onLost`), never thrown from a timer.
 */

import type { WatchListener } from '../backends/backend.js';
import type { LeaseCheckStatus, LeaseRef, Outcome, ReleaseStatus, RenewStatus } from '../core/decide.js';
import type { ErrorCode } from '../core/errors.js';
import type { Lock } from '../core/lock.js';

export type LeaseLostReason = 'broken' | 'expired' | 'unreachable';

/** The reason a lease's signal aborts with: its locks were broken, lapsed, or the store went away. */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
  readonly code: ErrorCode = 'E_LEASE_LOST';

  constructor(
    readonly reason: LeaseLostReason,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
  }
}

export interface Lease {
  /** The locks held (as granted; renewals move their expiry). */
  readonly locks: readonly Lock[];
  /** The first lock's fence (one per scope in `fences`): hand it to fenced resources. */
  readonly fence: number;
  readonly fences: readonly number[];
  /** The first lock's token (one per scope in `tokens`); empty when the lease did not take them. */
  readonly token: string;
  readonly tokens: readonly string[];
  /** Lease length in seconds, or null for locks without a TTL (held by their process). */
  readonly ttl: number | null;
  /** False when the locks were already the caller's (already_mine): release() leaves them be. */
  readonly owned: boolean;
  /** Aborts (reason: a LeaseLostError) before the lease can lapse when it is lost or cannot be renewed. */
  readonly signal: AbortSignal;
  /** When, by this process's wall clock (epoch ms), the work must stop unless a renewal succeeds. */
  readonly deadline: number | null;
  renew(): Promise<Outcome<RenewStatus>>;
  /** Stops renewing, waits for a renewal in flight, then releases. Safe to call more than once. */
  release(): Promise<Outcome<ReleaseStatus>>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** What a lease needs of the store, bound to one caller by the library. */
export interface LeaseStore {
  renew(refs: readonly LeaseRef[], ttlSeconds: number | null): Promise<Outcome<RenewStatus>>;
  check(refs: readonly LeaseRef[]): Promise<Outcome<LeaseCheckStatus>>;
  release(refs: readonly LeaseRef[]): Promise<Outcome<ReleaseStatus>>;
  /**
   * `refs`: the lease's locks, so that a store that can (Redis) tells only the commits that may
   * change them (Backend.watch's domains); without them, every commit.
   */
  watch(listener: WatchListener, refs?: readonly LeaseRef[]): Promise<() => Promise<void>>;
}

export interface LeaseOptions {
  readonly locks: readonly Lock[];
  readonly refs: readonly LeaseRef[];
  readonly ttl: number | null;
  readonly owned: boolean;
  /** When the request that granted (or last renewed) the locks was sent: wall and monotonic ms. */
  readonly since: Instant;
  readonly onLost?: (error: LeaseLostError) => void;
}

export interface Instant {
  readonly wall: number;
  readonly mono: number;
}

export const instant = (): Instant => ({ wall: Date.now(), mono: performance.now() });

/** How long before the lease lapses the signal aborts: a quarter of the TTL, at most 5 s. */
export function leaseMargin(ttlMs: number): number {
  return Math.min(5000, ttlMs / 4);
}

/** Without a TTL there is no deadline: a slow check still notices a break. */
const UNTIMED_CHECK_MS = 10_000;
/** Coalesces store-change wake-ups into at most one check this often. */
const CHECK_GAP_MS = 100;

export async function startLease(store: LeaseStore, options: LeaseOptions): Promise<Lease> {
  const controller = new AbortController();
  const ttlMs = options.ttl === null ? null : options.ttl * 1000;
  const margin = ttlMs === null ? 0 : leaseMargin(ttlMs);
  const interval = ttlMs === null ? UNTIMED_CHECK_MS : ttlMs / 3;
  const tickMs = Math.max(50, Math.min(1000, interval / 2, margin > 0 ? margin / 2 : 1000));
  let lastOk = options.since;
  let nextRenew = lastOk.mono + interval;
  let lastError: unknown = null;
  let inFlight: Promise<unknown> | null = null;
  let checking = false;
  let lastCheck = 0;
  let checkTimer: NodeJS.Timeout | null = null;
  let ended = false;
  let released: Promise<Outcome<ReleaseStatus>> | null = null;
  let unwatch: (() => Promise<void>) | null = null;

  const stop = () => {
    ended = true;
    clearInterval(ticker);
    if (checkTimer) clearTimeout(checkTimer);
    const off = unwatch;
    unwatch = null;
    if (off) off().catch(() => {});
  };

  const lose = (reason: LeaseLostReason, message: string, cause?: unknown) => {
    if (ended) return;
    stop();
    const error = new LeaseLostError(reason, message, cause === undefined ? {} : { cause });
    controller.abort(error);
    try {
      options.onLost?.(error);
    } catch {
      // The callback's failure must not escape a timer.
    }
  };

  const scopes = options.locks.map((l) => l.scope).join(' ');
  const gone = (status: string) =>
    status === 'expired'
      ? lose('expired', `the lease on ${scopes} expired`)
      : lose('broken', `the lock on ${scopes} was broken or released by someone else`);

  const deadlineOf = (since: Instant) =>
    ttlMs === null ? null : { wall: since.wall + ttlMs - margin, mono: since.mono + ttlMs - margin };

  const renewNow = (): Promise<Outcome<RenewStatus>> => {
    const sent = instant();
    const attempt = store.renew(options.refs, options.ttl).then(
      (outcome) => {
        if (outcome.status === 'renewed') {
          lastOk = sent;
          lastError = null;
          nextRenew = sent.mono + interval;
        } else gone(outcome.status);
        return outcome;
      },
      (error: unknown) => {
        lastError = error;
        // Retry soon, but keep to the deadline: the ticker aborts when it comes.
        nextRenew = performance.now() + Math.min(1000, interval / 3);
        throw error;
      },
    );
    const settled = attempt.catch(() => undefined);
    inFlight = settled;
    void settled.then(() => {
      if (inFlight === settled) inFlight = null;
    });
    return attempt;
  };

  const check = () => {
    if (ended || checking) return;
    checking = true;
    lastCheck = performance.now();
    store.check(options.refs).then(
      (outcome) => {
        checking = false;
        if (outcome.status !== 'mine' && !released) gone(outcome.status);
      },
      () => {
        // An unreachable store shows in the renewals, which keep to the deadline.
        checking = false;
      },
    );
  };

  const tick = () => {
    if (ended) return;
    const now = instant();
    const deadline = deadlineOf(lastOk);
    if (deadline !== null && (now.wall >= deadline.wall || now.mono >= deadline.mono)) {
      if (lastError !== null) {
        const why = lastError instanceof Error ? lastError.message : String(lastError);
        lose('unreachable', `could not renew the lease on ${scopes} in time: ${why}`, lastError);
      } else lose('expired', `could not renew the lease on ${scopes} before its deadline`);
      return;
    }
    if (inFlight === null && now.mono >= nextRenew) {
      if (ttlMs === null) {
        nextRenew = now.mono + interval;
        check();
      } else renewNow().catch(() => {});
    }
  };
  const ticker = setInterval(tick, tickMs);
  ticker.unref();

  // A break shows at once: every change to the store that may concern our locks makes us look
  // (coalesced). Best effort: a message missed (a dropped connection, a commit of an older
  // agent-lock version, which publishes on the store's channel only) delays the news until the
  // next renewal, at a third of the TTL, which finds the break; never past the deadline.
  try {
    const mine = new Set(options.refs.map((ref) => ref.id));
    const listener: WatchListener = (touched) => {
      if (ended || checkTimer) return;
      // A commit that names the records it touched and none of ours cannot have broken the lease.
      if (touched && !touched.some((id) => mine.has(id))) return;
      const wait = Math.max(0, lastCheck + CHECK_GAP_MS - performance.now());
      checkTimer = setTimeout(() => {
        checkTimer = null;
        check();
      }, wait);
      checkTimer.unref();
    };
    unwatch = await store.watch(listener, options.refs);
    if (ended && unwatch) {
      const off = unwatch;
      unwatch = null;
      await off().catch(() => {});
    }
  } catch {
    // Without notifications the renewals (or the slow check) still find a break.
  }

  const first = options.locks[0];
  const lease: Lease = {
    locks: options.locks,
    fence: first?.fence ?? 0,
    fences: options.locks.map((l) => l.fence),
    token: first?.token ?? '',
    tokens: options.locks.map((l) => l.token ?? ''),
    ttl: options.ttl,
    owned: options.owned,
    signal: controller.signal,
    get deadline() {
      return deadlineOf(lastOk)?.wall ?? null;
    },
    renew: () => renewNow(),
    release() {
      released ??= (async () => {
        stop();
        // A renewal in flight would otherwise land after the release and find nothing (or worse,
        // be mistaken for a loss): wait for it first.
        await inFlight;
        if (!options.owned) {
          return { status: 'released' as const, locks: [], conflicts: [] };
        }
        return store.release(options.refs);
      })();
      return released;
    },
    async [Symbol.asyncDispose]() {
      await lease.release();
    },
  };
  return lease;
}
